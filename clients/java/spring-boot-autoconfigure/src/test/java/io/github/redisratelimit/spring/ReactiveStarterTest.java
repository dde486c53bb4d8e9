package io.github.redisratelimit.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.redisratelimit.KeyState;
import io.github.redisratelimit.RateLimiter;
import io.github.redisratelimit.spring.reactive.ReactiveApp;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The WebFilter in a WebFlux application over a real HTTP port, on the
 * Lua backend (a server without the module): the policy's 429 and header
 * fields; a LEASE route's slot held while the response is pending and
 * released when it ends.
 */
@SpringBootTest(classes = ReactiveApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
    "spring.main.web-application-type=reactive",
    "ratelimit.rules[0].name=per-ip",
    "ratelimit.rules[0].key=rl:{r:$ip}:rate",
    "ratelimit.rules[0].limit=THROTTLE 2 3 60",
    "ratelimit.routes[0].path=/slow",
    "ratelimit.routes[0].rules[0].name=slow",
    "ratelimit.routes[0].rules[0].key=rl:{r:$ip}:slow",
    "ratelimit.routes[0].rules[0].limit=LEASE 1 30",
})
class ReactiveStarterTest {
    static final TestServer SERVER = TestServer.start(false);
    static final HttpClient HTTP = HttpClient.newHttpClient();

    @DynamicPropertySource
    static void redis(DynamicPropertyRegistry r) {
        r.add("spring.data.redis.host", () -> "127.0.0.1");
        r.add("spring.data.redis.port", () -> SERVER.port);
    }

    @AfterAll
    static void stop() throws Exception {
        SERVER.kill();
    }

    @LocalServerPort
    int port;

    @Autowired
    RateLimiter limiter;

    HttpRequest get(String path) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build();
    }

    @Test
    void theWebFilterLimitsAndReleasesLeasesWhenTheResponseEnds() throws Exception {
        assertEquals("lua", limiter.backendKind());
        CompletableFuture<HttpResponse<String>> slow = HTTP.sendAsync(get("/slow"), HttpResponse.BodyHandlers.ofString());
        long until = System.nanoTime() + 5_000_000_000L;
        while (limiter.inspect("rl:{r:127.0.0.1}:slow").isEmpty() && System.nanoTime() < until) {
            Thread.sleep(10);
        }
        KeyState.LeaseState held = (KeyState.LeaseState) limiter.inspect("rl:{r:127.0.0.1}:slow").orElseThrow();
        assertEquals(1, held.held());
        HttpResponse<String> second = HTTP.send(get("/slow"), HttpResponse.BodyHandlers.ofString());
        assertEquals(429, second.statusCode(), "the one slot is held");
        assertTrue(second.headers().firstValue("RateLimit-Policy").orElseThrow()
                .endsWith("\"slow\";q=1;qu=\"concurrent-requests\""));
        HttpResponse<String> first = slow.get();
        assertEquals(200, first.statusCode());
        assertEquals("\"per-ip\";q=3;w=60, \"slow\";q=1;qu=\"concurrent-requests\"",
                first.headers().firstValue("RateLimit-Policy").orElseThrow());
        until = System.nanoTime() + 5_000_000_000L;
        long h = 1;
        while (h != 0 && System.nanoTime() < until) {
            h = limiter.inspect("rl:{r:127.0.0.1}:slow").map(s -> ((KeyState.LeaseState) s).held()).orElse(0L);
            Thread.sleep(10);
        }
        assertEquals(0, h, "released when the response ended");
        // The rate rule: 3 units of capacity, two taken by /slow (the refused one took none).
        HttpResponse<String> ok = HTTP.send(get("/hello"), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, ok.statusCode());
        assertEquals("1", ok.headers().firstValue("X-RateLimit-Remaining").orElseThrow());
        assertEquals(200, HTTP.send(get("/hello"), HttpResponse.BodyHandlers.ofString()).statusCode());
        HttpResponse<String> refused = HTTP.send(get("/hello"), HttpResponse.BodyHandlers.ofString());
        assertEquals(429, refused.statusCode());
        // 20 s after the first unit, taken when /slow began (a second or two ago on a loaded machine).
        long retry = Long.parseLong(refused.headers().firstValue("Retry-After").orElseThrow());
        assertTrue(retry >= 17 && retry <= 20, "Retry-After " + retry);
        assertEquals("rate limited: retry in " + retry + " s\n", refused.body());
    }
}
