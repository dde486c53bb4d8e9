package io.github.redisratelimit.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.redisratelimit.KeyState;
import io.github.redisratelimit.Limit;
import io.github.redisratelimit.LettuceConnection;
import io.github.redisratelimit.RateLimiter;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * The meters of docs/metrics.md in a SimpleMeterRegistry, from the
 * middleware's decisions against a real server with the module: a refusal
 * counts limited on the binding rule, a shadow rule that would refuse
 * counts shadow_limited and the request goes on (also when every rule is
 * shadow), an outage counts error on every matched rule.
 */
class MetricsTest {
    static final TestServer SERVER = TestServer.start(true);
    static final RedisClient CLIENT = RedisClient.create(RedisURI.create("127.0.0.1", SERVER.port));
    static final RateLimiter LIMITER = RateLimiter.create(LettuceConnection.connect(CLIENT));

    @AfterAll
    static void stop() throws Exception {
        CLIENT.shutdown();
        SERVER.kill();
    }

    static RequestLimiter middleware(RateLimiter limiter, SimpleMeterRegistry registry, Policy.Rule... rules) {
        RateLimitProperties.Filter f = new RateLimitProperties.Filter();
        f.setTimeout(Duration.ofMillis(500));
        return new RequestLimiter(limiter, new PolicySource(Policy.of(rules)), f, null, null,
                new MicrometerMetrics(registry));
    }

    static RequestLimiter.Outcome decide(RequestLimiter m, String peer) {
        return m.decide(new RateLimitRequest("GET", "/x", peer, h -> List.of(), null), System.nanoTime())
                .toCompletableFuture().join();
    }

    static double count(SimpleMeterRegistry r, String rule, String result) {
        Counter c = r.find("ratelimit.decisions").tag("ratelimit.rule", rule).tag("ratelimit.result", result)
                .counter();
        return c == null ? 0 : c.count();
    }

    static long timed(SimpleMeterRegistry r, String result) {
        Timer t = r.find("ratelimit.decision.duration").tag("ratelimit.result", result).timer();
        return t == null ? 0 : t.count();
    }

    @Test
    void aRefusalCountsLimitedOnTheBindingRule() {
        SimpleMeterRegistry r = new SimpleMeterRegistry();
        RequestLimiter m = middleware(LIMITER, r, new Policy.Rule("per-ip", "rl:m1:{$ip}:a", Limit.slide(1, 60)),
                new Policy.Rule("per-ip-hour", "rl:m1:{$ip}:b", Limit.slide(100, 3600)));
        assertInstanceOf(RequestLimiter.Allowed.class, decide(m, "192.0.2.1"));
        RequestLimiter.Answer refused = assertInstanceOf(RequestLimiter.Answer.class, decide(m, "192.0.2.1"));
        assertEquals(429, refused.status());
        assertEquals(1, count(r, "per-ip", "allowed"));
        assertEquals(1, count(r, "per-ip", "limited"));
        assertEquals(2, count(r, "per-ip-hour", "allowed"), "its own outcome: it would have allowed");
        assertEquals(1, timed(r, "allowed"));
        assertEquals(1, timed(r, "limited"));
        assertTrue(r.find("ratelimit.decisions").counters().stream()
                .allMatch(c -> c.getId().getTags().size() == 2), "rule and result, never a key");
    }

    @Test
    void aShadowRuleThatWouldRefuseCountsShadowLimitedAndTheRequestGoesOn() {
        SimpleMeterRegistry r = new SimpleMeterRegistry();
        RequestLimiter m = middleware(LIMITER, r, new Policy.Rule("enforced", "rl:m2:{$ip}:a", Limit.slide(10, 60)),
                new Policy.Rule("candidate", "rl:m2:{$ip}:b", Limit.slide(1, 60).asShadow()));
        assertInstanceOf(RequestLimiter.Allowed.class, decide(m, "192.0.2.2"));
        RequestLimiter.Allowed second = assertInstanceOf(RequestLimiter.Allowed.class, decide(m, "192.0.2.2"));
        assertEquals(1, count(r, "candidate", "shadow_limited"));
        assertEquals(1, count(r, "candidate", "allowed"));
        assertEquals(2, count(r, "enforced", "allowed"));
        assertEquals(2, timed(r, "allowed"));
        // The header fields are the enforced rules' alone.
        assertEquals("\"enforced\";q=10;w=60", second.headers().get("RateLimit-Policy"));
    }

    @Test
    void everyRuleShadowIsDecidedRuleByRuleAndNeverRefuses() {
        SimpleMeterRegistry r = new SimpleMeterRegistry();
        RequestLimiter m = middleware(LIMITER, r, new Policy.Rule("s1", "rl:m3:{$ip}:a", Limit.slide(1, 60).asShadow()),
                new Policy.Rule("s2", "rl:m3:{$ip}:b", Limit.throttle(0, 1, 60).asShadow()));
        for (int i = 0; i < 3; i++) {
            RequestLimiter.Allowed a = assertInstanceOf(RequestLimiter.Allowed.class, decide(m, "192.0.2.3"));
            assertEquals(Map.of(), a.headers(), "no header field of a shadow rule");
        }
        assertEquals(2, count(r, "s1", "shadow_limited"));
        assertEquals(2, count(r, "s2", "shadow_limited"));
        assertEquals(1, count(r, "s1", "allowed"));
        assertEquals(3, timed(r, "allowed"));
        // Each key holds what enforcing it alone would have: the one allowed.
        assertEquals(1, ((KeyState.SlideState) LIMITER.inspect("rl:m3:{192.0.2.3}:a").orElseThrow()).units());
    }

    @Test
    void anOutageCountsErrorOnEveryMatchedRule() throws Exception {
        TestServer gone = TestServer.start(true);
        RedisClient client = RedisClient.create(RedisURI.create("127.0.0.1", gone.port));
        try {
            RateLimiter limiter = RateLimiter.create(LettuceConnection.connect(client));
            assertEquals("module", limiter.backendKind());
            gone.kill();
            SimpleMeterRegistry r = new SimpleMeterRegistry();
            RequestLimiter m = middleware(limiter, r, new Policy.Rule("a", "rl:m4:$ip", Limit.slide(1, 60)),
                    new Policy.Rule("b", "rl:m4b:$ip", Limit.slide(1, 60).asShadow()));
            RequestLimiter.Answer down = assertInstanceOf(RequestLimiter.Answer.class, decide(m, "192.0.2.4"));
            assertEquals(503, down.status());
            assertEquals(1, count(r, "a", "error"));
            assertEquals(1, count(r, "b", "error"));
            assertEquals(1, timed(r, "error"));
            assertNull(r.find("ratelimit.decisions").tag("ratelimit.result", "allowed").counter());
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
        }
    }
}
