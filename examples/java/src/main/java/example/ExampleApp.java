package example;

import io.github.redisratelimit.spring.ClientIdResolver;
import io.github.redisratelimit.spring.RateLimit;
import io.github.redisratelimit.spring.RequestSkipper;
import jakarta.servlet.http.HttpServletRequest;
import java.util.List;
import java.util.Map;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.stereotype.Service;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * The articles' two cases: a verification-code endpoint limited per
 * address (and per client), decided by @RateLimit; an API limited per user
 * and per address by the filter's policy in application.yml.
 */
@SpringBootApplication
public class ExampleApp {
    public static void main(String[] args) {
        SpringApplication.run(ExampleApp.class, args);
    }

    /** $client: the user named by the (demo) bearer token, else the address. */
    @Bean
    ClientIdResolver user() {
        return request -> {
            String auth = ((HttpServletRequest) request.request()).getHeader("Authorization");
            return auth != null && auth.startsWith("Bearer ") ? auth.substring(7) : null;
        };
    }

    /** The codes endpoint has its own limits; health checks pass untouched. */
    @Bean
    RequestSkipper skip() {
        return request -> request.path().startsWith("/actuator") || request.path().equals("/codes");
    }

    @Service
    public static class Codes {
        @RateLimit(name = "code-per-address", key = "'{code:' + #email + '}:address'", kind = RateLimit.Kind.SLIDE,
                limit = 3, window = 3600)
        @RateLimit(name = "code-per-minute", key = "'{code:' + #email + '}:minute'", kind = RateLimit.Kind.THROTTLE,
                maxBurst = 0, count = 1, period = 60)
        public String send(String email) {
            return "code sent to " + email + "\n";
        }
    }

    @RestController
    public static class Endpoints {
        private final Codes codes;

        Endpoints(Codes codes) {
            this.codes = codes;
        }

        @PostMapping("/codes")
        public String code(@RequestParam String email) {
            return codes.send(email);
        }

        @GetMapping("/api/items")
        public List<Map<String, Object>> items() {
            return List.of(Map.of("id", 1, "name", "first"), Map.of("id", 2, "name", "second"));
        }
    }
}
