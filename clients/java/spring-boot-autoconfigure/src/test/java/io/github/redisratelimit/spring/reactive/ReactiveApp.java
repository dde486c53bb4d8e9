package io.github.redisratelimit.spring.reactive;

import java.time.Duration;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

/** The WebFlux application of the starter's tests. */
@SpringBootApplication
public class ReactiveApp {
    /** The endpoints. */
    @RestController
    public static class Endpoints {
        /** @return ok */
        @GetMapping("/hello")
        public Mono<String> hello() {
            return Mono.just("hello");
        }

        /** @return ok, after a while (a lease is held meanwhile) */
        @GetMapping("/slow")
        public Mono<String> slow() {
            return Mono.delay(Duration.ofMillis(300)).thenReturn("slow");
        }
    }
}
