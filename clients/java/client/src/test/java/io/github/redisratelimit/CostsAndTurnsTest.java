package io.github.redisratelimit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Round 5's calls on every server, backend and driver (Targets): charge and
 * settle (one pipeline), acquire and acquireAll (MAXWAIT), BLOCK, UNITS,
 * SHADOW and RL.TOP, against the module's and the scripts' replies.
 */
class CostsAndTurnsTest {
    static List<Targets.Target> targets() {
        return Targets.all();
    }

    /** Counts what goes out: single commands and pipelines. */
    static final class Counting implements RedisConnection {
        final RedisConnection inner;
        final AtomicInteger singles = new AtomicInteger();
        final AtomicInteger pipelines = new AtomicInteger();
        final List<Integer> sizes = new ArrayList<>();

        Counting(RedisConnection inner) {
            this.inner = inner;
        }

        @Override
        public CompletionStage<Object> send(String name, List<byte[]> args, int keyFrom, int keyTo) {
            singles.incrementAndGet();
            return inner.send(name, args, keyFrom, keyTo);
        }

        @Override
        public Object sendSync(String name, List<byte[]> args, int keyFrom, int keyTo) {
            singles.incrementAndGet();
            return inner.sendSync(name, args, keyFrom, keyTo);
        }

        @Override
        public List<CompletionStage<Object>> sendAll(List<Command> commands) {
            pipelines.incrementAndGet();
            sizes.add(commands.size());
            return inner.sendAll(commands);
        }

        @Override
        public List<CompletionStage<Object>> sendAllSync(List<Command> commands) {
            pipelines.incrementAndGet();
            sizes.add(commands.size());
            return inner.sendAllSync(commands);
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("targets")
    void chargeRecordsPastTheLimit(Targets.Target t) {
        RateLimiter rl = t.rl();
        String k = t.key("charge");
        // 10 per 60 s, burst 4 (T = 6 s): 8 units put the TAT 48 s ahead, 18 s past the capacity.
        assertEquals(new Result(true, 5, 0, 18, 48), rl.charge(k, Limit.throttle(4, 10, 60), 8));
        assertTrue(rl.take(k, Limit.throttle(4, 10, 60)).limited(), "in debt");
        String s = t.key("charge-slide");
        assertEquals(new Result(false, 3, 2, -1, 60), rl.charge(s, Limit.slide(3, 60).withBlock(5), 1));
        ArgumentException lease = assertThrows(ArgumentException.class,
                () -> rl.charge(t.key("charge-lease"), Limit.lease(3, 60), 1));
        assertEquals("spec", lease.argument());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("targets")
    void settleGivesBackOrChargesInOnePipeline(Targets.Target t) throws Exception {
        Counting counting = new Counting(t.rl().connection());
        RateLimiter rl = RateLimiter.create(counting);
        assertEquals(t.backend(), rl.backendKind());
        String tag = "{" + t.key("settle") + "}";
        Limit tpm = Limit.slide(100_000, 60);
        Limit tpd = Limit.quota(1_000_000, QuotaUnit.DAY);
        Limit rpm = Limit.throttle(59, 60, 60);
        List<Entry> limits = List.of(Entry.of(tag + ":tpm", tpm), Entry.of(tag + ":tpd", tpd),
                Entry.of(tag + ":rpm", rpm));
        rl.allow(limits.subList(0, 2), 1500, null);
        rl.take(tag + ":rpm", rpm);
        // The scripts loaded (the Lua backend answers NOSCRIPT by EVAL, a command of its own).
        rl.charge(tag + ":scratch", tpm, 1);
        rl.refund(tag + ":scratch", tpm, 1);
        counting.singles.set(0);
        // Estimated 1500 tokens, used 900 on the minute (600 back) and 2000 on the day (500 more).
        List<Result> settled = rl.settle(limits, List.of(1500L, 1500L, 1L), List.of(900L, 2000L, 1L));
        assertEquals(0, counting.singles.get(), "nothing sent alone");
        assertEquals(1, counting.pipelines.get());
        assertEquals(List.of(2), counting.sizes, "the equal entry is not sent");
        assertEquals(100_000 - 900, settled.get(0).remaining());
        assertEquals(1_000_000 - 2000, settled.get(1).remaining());
        assertNull(settled.get(2));
        assertEquals(900, ((KeyState.SlideState) rl.inspect(tag + ":tpm").orElseThrow()).units());
        assertEquals(2000, ((KeyState.QuotaState) rl.inspect(tag + ":tpd").orElseThrow()).used());

        counting.singles.set(0);
        List<Result> scalar = rl.settleAsync(limits.subList(0, 1), 900, 1000).toCompletableFuture()
                .get(5, TimeUnit.SECONDS);
        assertEquals(100_000 - 1000, scalar.get(0).remaining());
        assertEquals(List.of(2, 1), counting.sizes);
        assertEquals(0, counting.singles.get());
        assertThrows(IllegalArgumentException.class, () -> rl.settle(limits, List.of(1L), List.of(1L)));
        ArgumentException lease = assertThrows(ArgumentException.class,
                () -> rl.settle(List.of(Entry.of(tag + ":l", Limit.lease(2, 30))), 2, 1));
        assertEquals("spec", lease.argument());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("targets")
    void acquireWaitsForItsTurn(Targets.Target t) throws Exception {
        RateLimiter rl = t.rl();
        String k = t.key("acquire");
        Throttle fourPerSecond = Limit.throttle(0, 4, 1); // a turn every 250 ms, capacity 1
        Result first = rl.acquire(k, fourPerSecond, Duration.ofSeconds(1));
        assertEquals(0, first.retryAfter(), "at once: no wait");
        long before = System.nanoTime();
        Result second = rl.acquire(k, fourPerSecond, Duration.ofSeconds(1));
        long slept = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - before);
        assertFalse(second.limited());
        assertTrue(second.retryAfter() > 0 && second.retryAfter() <= 250, second.toString());
        assertTrue(slept >= second.retryAfter(), "slept " + slept + " ms for a wait of " + second.retryAfter());
        // Its own turn is booked: the next one is 250 ms after it, more than 50 ms away.
        RateLimitedException refused = assertThrows(RateLimitedException.class,
                () -> rl.acquire(k, fourPerSecond, Duration.ofMillis(50)));
        assertTrue(refused.retryAfter() > 50 && refused.retryAfter() <= 250, refused.getMessage());
        assertEquals(List.of(k), refused.keys());
        // A deadline shorter than maxWait cuts the wait asked for: refused at once.
        long start = System.nanoTime();
        assertThrows(RateLimitedException.class, () -> rl.acquire(k, fourPerSecond, 1, Duration.ofSeconds(5),
                Instant.now().plusMillis(20)));
        assertTrue(System.nanoTime() - start < TimeUnit.MILLISECONDS.toNanos(1000), "it never sleeps when refused");
        // Can never fit: -1.
        assertEquals(-1, assertThrows(RateLimitedException.class,
                () -> rl.acquire(k, fourPerSecond, 2, Duration.ofSeconds(1), null)).retryAfter());

        String a = t.key("acquire-async");
        rl.acquireAsync(a, fourPerSecond, 1, Duration.ofSeconds(1), null).toCompletableFuture().get(5, TimeUnit.SECONDS);
        long asyncStart = System.nanoTime();
        Result later = rl.acquireAsync(a, fourPerSecond, 1, Duration.ofSeconds(1), null).toCompletableFuture()
                .get(5, TimeUnit.SECONDS);
        assertTrue(later.retryAfter() > 0);
        assertTrue(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - asyncStart) >= later.retryAfter());
        CompletionException async = assertThrows(CompletionException.class,
                () -> rl.acquireAsync(a, fourPerSecond, 1, Duration.ZERO, null).toCompletableFuture().join());
        assertInstanceOf(RateLimitedException.class, async.getCause());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("targets")
    void acquireAllWaitsForEveryLimit(Targets.Target t) {
        RateLimiter rl = t.rl();
        String tag = "{" + t.key("acquire-all") + "}";
        List<Entry> both = List.of(Entry.of(tag + ":a", Limit.throttle(0, 10, 1)),
                Entry.of(tag + ":b", Limit.throttle(0, 5, 1)));
        assertEquals(0, rl.acquireAll(both, Duration.ofSeconds(1)).retryAfter());
        AllowResult second = rl.acquireAll(both, Duration.ofSeconds(1));
        // The call's wait is the longest: the 5-per-second limit's (200 ms).
        assertEquals(2, second.index());
        assertTrue(second.retryAfter() > 100 && second.retryAfter() <= 200, second.toString());
        assertThrows(RateLimitedException.class, () -> rl.acquireAll(both, Duration.ofMillis(10)));
        ArgumentException notThrottle = assertThrows(ArgumentException.class, () -> rl.acquireAll(
                List.of(Entry.of(tag + ":c", Limit.throttle(0, 10, 1)), Entry.of(tag + ":d", Limit.slide(5, 1))),
                Duration.ofSeconds(1)));
        assertEquals("MAXWAIT", notThrottle.argument());
        assertEquals(2, notThrottle.spec());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("targets")
    void blockKeepsRefusing(Targets.Target t) {
        RateLimiter rl = t.rl();
        String k = t.key("block");
        Limit oncePerMinute = Limit.throttle(0, 1, 60).withBlock(600);
        assertFalse(rl.take(k, oncePerMinute).limited());
        Result refused = rl.take(k, oncePerMinute);
        assertTrue(refused.limited());
        assertEquals(600, refused.retryAfter(), "the block's end, later than the limiter's own 60 s");
        // Blocked: refused whatever the call says, here without BLOCK.
        assertEquals(600, rl.take(k, Limit.throttle(0, 1, 60)).retryAfter());
        long until = rl.inspect(k).orElseThrow().blockedUntil();
        assertTrue(Math.abs(until - (System.currentTimeMillis() + 600_000)) < 60_000, "blocked_until " + until);
        String free = t.key("unblocked");
        rl.take(free, oncePerMinute);
        assertNull(rl.inspect(free).orElseThrow().blockedUntil(), "allowed: not blocked");
        String tag = "{" + t.key("block-allow") + "}";
        AllowResult r = rl.allow(List.of(Entry.of(tag + ":a", Limit.slide(1, 60).withBlock(300))), 2, null);
        assertEquals(-1, r.retryAfter(), "can never fit: no block");
        ArgumentException lease = assertThrows(ArgumentException.class,
                () -> rl.take(t.key("block-lease"), Limit.lease(1, 30).withBlock(5), 1, "id"));
        assertEquals("BLOCK", lease.argument());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("targets")
    void unitsAndShadowInOneAllow(Targets.Target t) {
        RateLimiter rl = t.rl();
        String tag = "{" + t.key("shadow") + "}";
        List<Entry> call = List.of(Entry.of(tag + ":rpm", Limit.throttle(59, 60, 60)),
                Entry.of(tag + ":tpm", Limit.throttle(99_999, 100_000, 60).withUnits(1500)),
                Entry.of(tag + ":new", Limit.slide(1, 60).asShadow()));
        AllowResult first = rl.allow(call);
        assertFalse(first.limited());
        assertEquals(100_000 - 1500, first.results().get(1).remaining());
        AllowResult second = rl.allow(call);
        assertFalse(second.limited(), "a shadow limit never refuses");
        assertTrue(second.results().get(2).limited(), "but shows that it would");
        assertTrue(second.index() <= 2, "the binding limit is an enforced one");
        assertEquals(1, ((KeyState.SlideState) rl.inspect(tag + ":new").orElseThrow()).units(),
                "the shadow limit recorded only what it allowed");
        ArgumentException all = assertThrows(ArgumentException.class,
                () -> rl.allow(List.of(Entry.of(tag + ":x", Limit.slide(1, 60).asShadow()))));
        assertEquals("SHADOW", all.argument());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("targets")
    void topListsTheRefusedKeysOnTheModule(Targets.Target t) {
        RateLimiter rl = t.rl();
        String k = t.key("top");
        for (int i = 0; i < 4; i++) {
            rl.take(k, Limit.slide(1, 600));
        }
        if (t.backend().equals("lua")) {
            ArgumentException e = assertThrows(ArgumentException.class, rl::top);
            assertEquals("RL.TOP needs the module: the Lua backend keeps no summary of refusals", e.reply());
            return;
        }
        TopKey mine = rl.top(128).stream().filter(e -> e.key().equals(k)).findFirst().orElseThrow();
        // 3 refusals, decayed over the few ms since, rounded down.
        assertTrue(mine.refusals() >= 2 && mine.refusals() <= 3, mine.toString());
        assertTrue(Math.abs(System.currentTimeMillis() - mine.lastRefusalMs()) < 60_000, mine.toString());
        assertEquals("COUNT", assertThrows(ArgumentException.class, () -> rl.top(0)).argument());
        assertTrue(rl.topAsync(null).toCompletableFuture().join().size() <= 10);
    }
}
