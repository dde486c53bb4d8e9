package io.github.redisratelimit.spring.servlet;

import io.github.redisratelimit.spring.RateLimit;
import io.github.redisratelimit.spring.RateLimitedException;

import io.github.redisratelimit.QuotaUnit;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.http.ResponseEntity;
import org.springframework.stereotype.Service;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/** The servlet application of the starter's tests. */
@SpringBootApplication
public class ServletApp {
    /** A user of the SpEL keys. */
    public record User(String id) {}

    /** A service with limits of its own. */
    @Service
    public static class Codes {
        /**
         * @param email the address
         * @return what was sent
         */
        @RateLimit(name = "code-per-address", key = "'code:' + #email", kind = RateLimit.Kind.SLIDE, limit = 2,
                window = 3600)
        @RateLimit(name = "code-per-day", key = "'code-day:' + #email", kind = RateLimit.Kind.QUOTA, limit = 10,
                unit = QuotaUnit.DAY, tz = "Europe/Berlin")
        public String send(String email) {
            return "sent to " + email;
        }

        /**
         * @param user the user
         * @return the report
         */
        @RateLimit(key = "'report:' + #user.id", kind = RateLimit.Kind.THROTTLE, maxBurst = 0, count = 1,
                period = 3600, fallback = "busy")
        public String report(User user) {
            return "report for " + user.id();
        }

        String busy(User user, RateLimitedException e) {
            return "busy, " + user.id() + ", retry in " + e.retryAfterSeconds();
        }
    }

    /** The endpoints. */
    @RestController
    public static class Endpoints {
        private final Codes codes;

        Endpoints(Codes codes) {
            this.codes = codes;
        }

        /** @return ok */
        @GetMapping("/hello")
        public String hello() {
            return "hello";
        }

        /** @return a 500 */
        @GetMapping("/fail")
        public ResponseEntity<String> fail() {
            return ResponseEntity.status(500).body("failed");
        }

        /**
         * @param email the address
         * @return what was sent
         */
        @PostMapping("/codes")
        public String code(@RequestParam String email) {
            return codes.send(email);
        }

        /**
         * @param id the user
         * @return the report
         */
        @GetMapping("/reports/{id}")
        public String report(@PathVariable String id) {
            return codes.report(new User(id));
        }
    }
}
