package io.github.redisratelimit.spring;

import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;

/** Answers a {@link RateLimitedException} with 429, its header fields and the middleware's body (MVC and WebFlux). */
@RestControllerAdvice
@Order(Ordered.HIGHEST_PRECEDENCE)
public class RateLimitExceptionHandler {
    /**
     * @param e the refusal
     * @return the 429
     */
    @ExceptionHandler(RateLimitedException.class)
    public ResponseEntity<String> limited(RateLimitedException e) {
        HttpHeaders h = new HttpHeaders();
        e.headers().forEach(h::set);
        h.setContentType(new MediaType("text", "plain", java.nio.charset.StandardCharsets.UTF_8));
        // The builder, not new ResponseEntity<>(body, h, status): compiled against Framework 6
        // that constructor takes a MultiValueMap, which Framework 7's HttpHeaders no longer is.
        return ResponseEntity.status(HttpStatus.TOO_MANY_REQUESTS).headers(h).body(e.getMessage() + "\n");
    }
}
