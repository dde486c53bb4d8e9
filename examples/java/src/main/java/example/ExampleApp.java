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
 * The articles' cases: a verification-code endpoint limited per address
 * (and per client), decided by @RateLimit; an API limited per user and per
 * address by the filter's policy in application.yml; an LLM endpoint whose
 * token cost is known afterwards ({@link Completions}: an estimate taken,
 * then settled); and calls paced to a provider's rate ({@link Provider}).
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

    /** The codes and LLM endpoints have their own limits; health checks pass untouched. */
    @Bean
    RequestSkipper skip() {
        return request -> request.path().startsWith("/actuator") || request.path().equals("/codes")
                || request.path().equals("/llm");
    }

    /** A stand-in model: at most 1,500 tokens a call, 100 a word of the prompt used. */
    @Bean
    Completions.Model model() {
        return new Completions.Model() {
            @Override
            public long estimate(String prompt) {
                return 1500;
            }

            @Override
            public Completions.Reply complete(String prompt) {
                long words = prompt.isBlank() ? 0 : prompt.trim().split("\\s+").length;
                return new Completions.Reply("echo: " + prompt, words * 100);
            }
        };
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
        private final Completions completions;

        Endpoints(Codes codes, Completions completions) {
            this.codes = codes;
            this.completions = completions;
        }

        @PostMapping("/llm")
        public String llm(@RequestParam String user, @RequestParam String prompt) {
            Completions.Answer a = completions.complete(user, prompt);
            return a.text() + " (" + a.tokens() + " tokens; " + a.tokensLeft() + " left this minute)\n";
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
