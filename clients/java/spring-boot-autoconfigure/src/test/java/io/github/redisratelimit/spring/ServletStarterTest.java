package io.github.redisratelimit.spring;

import io.github.redisratelimit.spring.servlet.ServletApp;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.redisratelimit.Limit;
import io.github.redisratelimit.RateLimiter;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The starter in a servlet application over a real HTTP port, against a
 * real server with the module: the filter's policy from application
 * properties, @RateLimit with SpEL keys (429 from the handler, a fallback),
 * a policy changed at run time, the meters.
 */
@SpringBootTest(classes = ServletApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
    "ratelimit.rules[0].name=per-ip",
    "ratelimit.rules[0].key=rl:{ip:$ip}:$method",
    "ratelimit.rules[0].limit=SLIDE 3 60",
    "ratelimit.routes[0].path=/fail",
    "ratelimit.routes[0].rules[0].name=fail",
    "ratelimit.routes[0].rules[0].key=rl:{fail:$ip}",
    "ratelimit.routes[0].rules[0].limit=SLIDE 100 60",
    "ratelimit.filter.refund-5xx=true",
    "spring.main.web-application-type=servlet",
})
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ServletStarterTest {
    static final TestServer SERVER = TestServer.start(true);
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
    PolicySource policies;

    @Autowired
    MeterRegistry meters;

    @Autowired
    RateLimiter limiter;

    HttpResponse<String> send(String method, String path) throws Exception {
        HttpRequest r = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .method(method, HttpRequest.BodyPublishers.noBody()).build();
        return HTTP.send(r, HttpResponse.BodyHandlers.ofString());
    }

    @Test
    @Order(1)
    void theFilterLimitsEveryRequestByItsPolicy() throws Exception {
        assertEquals("module", limiter.backendKind());
        for (int i = 2; i >= 0; i--) {
            HttpResponse<String> ok = send("GET", "/hello");
            assertEquals(200, ok.statusCode());
            assertEquals("hello", ok.body());
            assertEquals("\"per-ip\";q=3;w=60", ok.headers().firstValue("RateLimit-Policy").orElseThrow());
            assertEquals(Long.toString(i), ok.headers().firstValue("X-RateLimit-Remaining").orElseThrow());
            assertTrue(ok.headers().firstValue("Retry-After").isEmpty());
        }
        HttpResponse<String> refused = send("GET", "/hello");
        assertEquals(429, refused.statusCode());
        long retry = Long.parseLong(refused.headers().firstValue("Retry-After").orElseThrow());
        assertTrue(retry >= 59 && retry <= 60, "Retry-After " + retry);
        assertEquals("rate limited: retry in " + retry + " s\n", refused.body());
        assertEquals("\"per-ip\";r=0;t=" + retry, refused.headers().firstValue("RateLimit").orElseThrow());
        // The key has $method: another method has its own limit.
        assertEquals(200, send("POST", "/codes?email=a@example.com").statusCode());
        assertTrue(meters.get("ratelimit.decisions").tag("ratelimit.rule", "per-ip")
                .tag("ratelimit.result", "limited").counter().count() >= 1);
        assertTrue(meters.get("ratelimit.decision.duration").timers().stream()
                .mapToLong(io.micrometer.core.instrument.Timer::count).sum() >= 4);
    }

    @Test
    @Order(2)
    void aNewPolicyAppliesFromTheNextRequest() throws Exception {
        assertEquals(429, send("GET", "/hello").statusCode());
        policies.set(Policy.of(new Policy.Rule("per-ip-2", "rl:{ip2:$ip}", Limit.slide(100, 60))));
        HttpResponse<String> ok = send("GET", "/hello");
        assertEquals(200, ok.statusCode());
        assertEquals("\"per-ip-2\";q=100;w=60", ok.headers().firstValue("RateLimit-Policy").orElseThrow());
        policies.set(Policy.none());
        HttpResponse<String> none = send("GET", "/hello");
        assertEquals(200, none.statusCode());
        assertNull(none.headers().firstValue("RateLimit").orElse(null), "no rule: no header field");
    }

    @Test
    @Order(3)
    void aRateLimitAnnotationDecidesItsLimitsInOneCall() throws Exception {
        policies.set(Policy.none());
        assertEquals("sent to b@example.com", send("POST", "/codes?email=b@example.com").body());
        assertEquals(200, send("POST", "/codes?email=b@example.com").statusCode());
        HttpResponse<String> refused = send("POST", "/codes?email=b@example.com");
        assertEquals(429, refused.statusCode());
        assertTrue(refused.body().startsWith("rate limited: retry in "), refused.body());
        assertEquals("\"code-per-address\";q=2;w=3600, \"code-per-day\";q=10",
                refused.headers().firstValue("RateLimit-Policy").orElseThrow());
        // The refusal recorded nothing: the day quota counts the two sent.
        assertEquals(8, limiter.peek(List.of(io.github.redisratelimit.Entry.of("rl:code-day:b@example.com",
                Limit.quota(10, io.github.redisratelimit.QuotaUnit.DAY).in("Europe/Berlin"))), 0, null).remaining());
        // Another address has its own limits.
        assertEquals(200, send("POST", "/codes?email=c@example.com").statusCode());
    }

    @Test
    @Order(4)
    void aRefusedCallGoesToItsFallback() throws Exception {
        assertEquals("report for 42", send("GET", "/reports/42").body());
        HttpResponse<String> busy = send("GET", "/reports/42");
        assertEquals(200, busy.statusCode());
        assertTrue(busy.body().startsWith("busy, 42, retry in "), busy.body());
        assertEquals("report for 43", send("GET", "/reports/43").body());
    }

    @Test
    @Order(5)
    void aFiveHundredGivesItsUnitsBack() throws Exception {
        policies.set(new Policy(List.of(), List.of(new Policy.Route("/fail", List.of(),
                List.of(new Policy.Rule("fail", "rl:{fail5:$ip}", Limit.slide(1, 60)))))));
        for (int i = 0; i < 3; i++) {
            HttpResponse<String> r = send("GET", "/fail");
            assertEquals(500, r.statusCode(), "given back, so never refused");
            Thread.sleep(100); // the give-back runs after the response
        }
        assertFalse(send("GET", "/hello").headers().firstValue("RateLimit").isPresent(), "no route rule for /hello");
    }

    @Test
    @Order(6)
    void aBlockedKeyIsRefusedUntilTheBlockEnds() throws Exception {
        policies.set(Policy.of(new Policy.Rule("login", "rl:{login6:$ip}", Limit.slide(1, 60).withBlock(600))));
        HttpResponse<String> first = send("GET", "/hello");
        assertEquals(200, first.statusCode());
        HttpResponse<String> blocked = send("GET", "/hello");
        assertEquals(429, blocked.statusCode());
        assertEquals("600", blocked.headers().firstValue("Retry-After").orElseThrow(), "the block's end");
    }

    @Test
    @Order(7)
    void aShadowRuleNeverRefuses() throws Exception {
        policies.set(Policy.of(new Policy.Rule("login", "rl:{login7:$ip}", Limit.slide(10, 60)),
                new Policy.Rule("login-new", "rl:{login7:$ip}:new", Limit.slide(1, 60).asShadow())));
        for (int i = 0; i < 2; i++) {
            HttpResponse<String> ok = send("GET", "/hello");
            assertEquals(200, ok.statusCode());
            assertEquals("\"login\";q=10;w=60", ok.headers().firstValue("RateLimit-Policy").orElseThrow());
        }
        assertEquals(1, meters.get("ratelimit.decisions").tag("ratelimit.rule", "login-new")
                .tag("ratelimit.result", "shadow_limited").counter().count());

        policies.set(Policy.of(new Policy.Rule("only-shadow", "rl:{shadow7:$ip}", Limit.slide(1, 60).asShadow())));
        for (int i = 0; i < 2; i++) {
            HttpResponse<String> ok = send("GET", "/hello");
            assertEquals(200, ok.statusCode());
            assertTrue(ok.headers().firstValue("RateLimit").isEmpty(), "no field of a shadow rule");
        }
        assertEquals(1, meters.get("ratelimit.decisions").tag("ratelimit.rule", "only-shadow")
                .tag("ratelimit.result", "shadow_limited").counter().count());
    }
}
