package io.github.redisratelimit.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.redisratelimit.Limit;
import io.github.redisratelimit.RateLimiter;
import io.github.redisratelimit.RedisConnection;
import io.github.redisratelimit.ServerError;
import java.net.ConnectException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/** The middleware's decisions without a server: identity, failing open or closed, configuration errors. */
class RequestLimiterTest {
    static RateLimitRequest request(String peer, Map<String, List<String>> headers) {
        return new RateLimitRequest("GET", "/x", peer, h -> headers.getOrDefault(h, List.of()), null);
    }

    @Test
    void headersCountOnlyFromTrustedProxies() {
        Identity none = new Identity(List.of(), "X-Forwarded-For", "X-Client-Id");
        Map<String, List<String>> xff = Map.of("X-Forwarded-For", List.of("203.0.113.7, 10.0.0.2"),
                "X-Client-Id", List.of("key-1"));
        assertEquals("10.0.0.1", none.ip("10.0.0.1", h -> xff.get(h)));
        assertEquals("10.0.0.1", none.client(null, "10.0.0.1", "10.0.0.1", h -> xff.get(h)));
        Identity trusted = new Identity(List.of("10.0.0.0/8"), "X-Forwarded-For", "X-Client-Id");
        assertEquals("203.0.113.7", trusted.ip("10.0.0.1", h -> xff.get(h)));
        assertEquals("key-1", trusted.client(null, "10.0.0.1", "203.0.113.7", h -> xff.get(h)));
        assertEquals("u42", trusted.client("u42", "10.0.0.1", "203.0.113.7", h -> xff.get(h)));
        assertEquals("192.0.2.1", trusted.ip("192.0.2.1", h -> xff.get(h)), "an untrusted peer");
        Identity forwarded = new Identity(List.of("127.0.0.1"), "Forwarded", null);
        Map<String, List<String>> fwd = Map.of("Forwarded", List.of("for=\"[2001:db8::1]:4711\";proto=https, for=127.0.0.1"),
                "X-Forwarded-For", List.of("198.51.100.1"));
        assertEquals("2001:db8::1", forwarded.ip("127.0.0.1", h -> fwd.get(h)));
        assertEquals("192.0.2.9", Identity.peer("::ffff:192.0.2.9"));
        assertThrows(IllegalArgumentException.class, () -> new Identity(List.of("example.com"), "X-Forwarded-For", null));
    }

    static RequestLimiter limiter(RedisConnection c, boolean failOpen) {
        RateLimitProperties.Filter f = new RateLimitProperties.Filter();
        f.setFailOpen(failOpen);
        RateLimiter rl = RateLimiter.builder(c).backend(RateLimiter.BackendChoice.MODULE).prefix("RL").build();
        return new RequestLimiter(rl, new PolicySource(Policy.of(new Policy.Rule("r", "rl:$ip", Limit.slide(5, 60)))),
                f, null, null, RateLimitMetrics.NONE);
    }

    @Test
    void outagesAndConfigurationErrorsAsTheContractSays() {
        RedisConnection down = (name, args, from, to) -> CompletableFuture.failedFuture(new ConnectException("refused"));
        RedisConnection err = (name, args, from, to) -> CompletableFuture.failedFuture(
                new ServerError("ERR window must be an integer from 1 to 315360000 (seconds)"));
        RateLimitRequest r = request("192.0.2.1", Map.of());
        RequestLimiter.Answer closed = assertInstanceOf(RequestLimiter.Answer.class,
                limiter(down, false).decide(r, System.nanoTime()).toCompletableFuture().join());
        assertEquals(503, closed.status());
        assertInstanceOf(RequestLimiter.Pass.class, limiter(down, true).decide(r, System.nanoTime())
                .toCompletableFuture().join());
        RequestLimiter.Answer config = assertInstanceOf(RequestLimiter.Answer.class,
                limiter(err, false).decide(r, System.nanoTime()).toCompletableFuture().join());
        assertEquals(500, config.status());
        assertEquals("rate limiter misconfigured\n", config.body());
        // The deadline counts from arrival: a request that waited past it fails at once.
        RequestLimiter.Answer late = assertInstanceOf(RequestLimiter.Answer.class,
                limiter(down, false).decide(r, System.nanoTime() - 1_000_000_000L).toCompletableFuture().join());
        assertEquals(503, late.status());
    }

    @Test
    void blockAndShadowFromPropertiesAndLimitWords() {
        assertEquals(Limit.slide(5, 300).withBlock(900).asShadow(), Policy.parseLimit("SLIDE 5 300 BLOCK 900 SHADOW"));
        assertEquals(Limit.throttle(0, 1, 1000).inMillis().withBlock(5000),
                Policy.parseLimit("THROTTLE 0 1 1000 block 5000 MS"));
        RateLimitProperties p = new RateLimitProperties();
        RateLimitProperties.Rule r = new RateLimitProperties.Rule();
        r.setName("login");
        r.setKey("rl:{login:$ip}");
        r.setLimit("SLIDE 5 300");
        r.setBlock(java.time.Duration.ofMinutes(15));
        RateLimitProperties.Rule s = new RateLimitProperties.Rule();
        s.setName("login-new");
        s.setKey("rl:{login2:$ip}");
        s.setLimit("SLIDE 1000 300 MS");
        s.setBlock(java.time.Duration.ofMillis(1500));
        s.setShadow(true);
        p.setRules(List.of(r, s));
        Policy policy = Policy.from(p);
        assertEquals(Limit.slide(5, 300).withBlock(900), policy.rules().get(0).limit());
        assertEquals(Limit.slide(1000, 300).inMillis().withBlock(1500).asShadow(), policy.rules().get(1).limit());
        r.setBlock(java.time.Duration.ofMillis(1500));
        IllegalArgumentException half = assertThrows(IllegalArgumentException.class, () -> Policy.from(p));
        assertTrue(half.getMessage().contains("not a whole number of seconds"), half.getMessage());
    }

    @Test
    void headerFieldsAreTheEnforcedRulesOnly() {
        io.github.redisratelimit.Result allowed = new io.github.redisratelimit.Result(false, 10, 9, -1, 60);
        io.github.redisratelimit.Result wouldRefuse = new io.github.redisratelimit.Result(true, 1, 0, 60, 60);
        io.github.redisratelimit.AllowResult r = new io.github.redisratelimit.AllowResult(false, 10, 8, -1, 60, 3,
                List.of(allowed, wouldRefuse, new io.github.redisratelimit.Result(false, 10, 8, -1, 60)));
        List<io.github.redisratelimit.RateLimitHeaders.Named> named = List.of(
                new io.github.redisratelimit.RateLimitHeaders.Named("a", Limit.slide(10, 60)),
                new io.github.redisratelimit.RateLimitHeaders.Named("new", Limit.slide(1, 60).asShadow()),
                new io.github.redisratelimit.RateLimitHeaders.Named("b", Limit.slide(10, 60)));
        Decisions.Decided d = new Decisions.Decided(r, r.results());
        Map<String, String> h = Decisions.headers(named, d);
        assertEquals("\"a\";q=10;w=60, \"b\";q=10;w=60", h.get("RateLimit-Policy"));
        assertEquals("\"b\";r=8;t=60", h.get("RateLimit"));
        List<io.github.redisratelimit.Entry> entries = List.of(io.github.redisratelimit.Entry.of("k1", named.get(0).limit()),
                io.github.redisratelimit.Entry.of("k2", named.get(1).limit()),
                io.github.redisratelimit.Entry.of("k3", named.get(2).limit()));
        assertEquals(List.of("allowed", "shadow_limited", "allowed"), Decisions.outcomes(entries, d));
        assertEquals(Map.of(), Decisions.headers(named, new Decisions.Decided(null, r.results())), "all shadow");
    }

    @Test
    void policiesAreCheckedWhenMade() {
        assertThrows(IllegalArgumentException.class, () -> Policy.of(new Policy.Rule("a", "rl:$user", Limit.slide(1, 1))));
        assertThrows(IllegalArgumentException.class, () -> Policy.of(new Policy.Rule("a", "k", Limit.slide(1, 1)),
                new Policy.Rule("a", "k2", Limit.slide(1, 1))));
        assertEquals(Limit.throttle(4, 10, 60), Policy.parseLimit("THROTTLE 4 10 60"));
        assertEquals(Limit.quota(1000, io.github.redisratelimit.QuotaUnit.DAY).in("Europe/Berlin"),
                Policy.parseLimit("QUOTA 1000 day TZ Europe/Berlin"));
        assertEquals(Limit.slide(5, 1500).inMillis().withPrecision(100), Policy.parseLimit("SLIDE 5 1500 PRECISION 100 MS"));
        assertThrows(IllegalArgumentException.class, () -> Policy.parseLimit("LEAKY 1 2"));
        assertThrows(IllegalArgumentException.class, () -> Policy.parseLimit("SLIDE ten 60"));
    }
}
