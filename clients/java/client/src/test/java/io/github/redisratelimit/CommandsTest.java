package io.github.redisratelimit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every command through the typed calls, on every server, backend and
 * driver (Targets): exact replies where the semantics allow, the module's
 * errors as ArgumentException naming the argument, WRONGTYPE as its own.
 */
class CommandsTest {
    static List<Targets.Target> targets() {
        return Targets.all();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("targets")
    void backendIsTheOneExpected(Targets.Target t) {
        assertEquals(t.backend(), t.rl().backendKind());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("targets")
    void throttleAnswersTheFiveFields(Targets.Target t) {
        RateLimiter rl = t.rl();
        String k = t.key("throttle");
        // 10 per 60 s, burst 4 (capacity 5): T = 6 s.
        assertEquals(new Result(false, 5, 4, -1, 6), rl.throttle(k, 4, 10, 60));
        assertEquals(new Result(false, 5, 0, -1, 30), rl.throttle(k, 4, 10, 60, 4, false));
        Result refused = rl.throttle(k, 4, 10, 60);
        assertTrue(refused.limited());
        assertEquals(6, refused.retryAfter());
        // Can never fit: -1.
        assertEquals(-1, rl.throttle(k, 4, 10, 60, 6, false).retryAfter());
        // MS: 3 per second, times in ms.
        Result ms = rl.throttle(t.key("throttle-ms"), 0, 3, 1000, 1, true);
        assertEquals(new Result(false, 1, 0, -1, 334), ms);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("targets")
    void slideSliceAndQuota(Targets.Target t) {
        RateLimiter rl = t.rl();
        String s = t.key("slide");
        assertEquals(new Result(false, 3, 2, -1, 60), rl.slide(s, 3, 60));
        rl.slide(s, 3, 60, 2, false, null);
        Result refused = rl.slide(s, 3, 60);
        assertTrue(refused.limited());
        assertTrue(refused.retryAfter() >= 59 && refused.retryAfter() <= 60, refused.toString());
        assertEquals(false, rl.slide(t.key("slide-p"), 3, 60, 1, false, 5L).limited());

        String sl = t.key("slice");
        Result slice = rl.slice(sl, 10, 60, 6);
        assertEquals(10, slice.limit());
        assertEquals(9, slice.remaining());
        assertFalse(slice.limited());

        Result q = rl.quota(t.key("quota"), 100, QuotaUnit.DAY, 1, "Europe/Berlin", false);
        assertEquals(100, q.limit());
        assertEquals(99, q.remaining());
        assertTrue(q.resetAfter() > 0 && q.resetAfter() <= 25 * 3600, q.toString());
        assertEquals(99, rl.quota(t.key("quota-utc"), 100, QuotaUnit.MONTH).remaining());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("targets")
    void limitsAsValuesTakeAllowPeekRefund(Targets.Target t) {
        RateLimiter rl = t.rl();
        String tag = "{" + t.key("allow") + "}";
        String a = tag + ":a";
        String b = tag + ":b";
        Limit perMinute = Limit.slide(5, 60);
        Limit perHour = Limit.slice(2, 3600, 4);
        assertEquals(4, rl.take(a, perMinute).remaining());
        List<Entry> both = List.of(Entry.of(a, perMinute), Entry.of(b, perHour));
        AllowResult first = rl.allow(both);
        assertFalse(first.limited());
        // The binding limit is the one with the least remaining: the hourly (1 left).
        assertEquals(2, first.index());
        assertEquals(1, first.remaining());
        assertEquals(List.of(3L, 1L), first.results().stream().map(Result::remaining).toList());
        assertEquals(first.binding(), first.results().get(1));

        AllowResult peek = rl.peek(both);
        assertFalse(peek.limited());
        assertEquals(peek, rl.peek(both), "a peek changes nothing");

        rl.allow(both);
        AllowResult refused = rl.allow(both);
        assertTrue(refused.limited());
        assertEquals(2, refused.index());
        // A limit that would allow shows its fields as if it had taken the
        // unit, but nothing is recorded anywhere: the minute log holds 3.
        assertEquals(1, refused.results().get(0).remaining());
        assertEquals(3, ((KeyState.SlideState) rl.inspect(a).orElseThrow()).units());

        Result back = rl.refund(b, perHour, 1);
        assertEquals(1, back.remaining());
        assertFalse(rl.allow(both, 1, null).limited());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("targets")
    void leaseReleaseAndInspect(Targets.Target t) {
        RateLimiter rl = t.rl();
        String k = t.key("lease");
        assertEquals(new Result(false, 2, 1, -1, 30), rl.lease(k, 2, 30, "job-1"));
        rl.lease(k, 2, 30, "job-2");
        Result full = rl.lease(k, 2, 30, "job-3");
        assertTrue(full.limited());
        KeyState state = rl.inspect(k).orElseThrow();
        KeyState.LeaseState lease = assertInstanceOf(KeyState.LeaseState.class, state);
        assertEquals(2, lease.held());
        assertEquals(2, lease.holders().size());
        assertEquals("job-1", lease.holders().get(0).leaseId());
        assertTrue(rl.release(k, "job-1"));
        assertFalse(rl.release(k, "job-1"), "released twice: 0");
        assertEquals(1, rl.inspect(k).map(s -> ((KeyState.LeaseState) s).held()).orElseThrow());

        assertTrue(rl.inspect(t.key("none")).isEmpty());
        String th = t.key("inspect-throttle");
        rl.throttle(th, 4, 10, 60);
        KeyState.ThrottleState ts = assertInstanceOf(KeyState.ThrottleState.class, rl.inspect(th).orElseThrow());
        assertTrue(ts.tatAheadMs() > 5000 && ts.tatAheadMs() <= 6000, ts.toString());
        String sl = t.key("inspect-slice");
        rl.slice(sl, 10, 60, 6);
        KeyState.SliceState ss = assertInstanceOf(KeyState.SliceState.class, rl.inspect(sl).orElseThrow());
        assertEquals(7, ss.counts().size());
        assertEquals(1, ss.units());
        String q = t.key("inspect-quota");
        rl.quota(q, 10, QuotaUnit.DAY, 3, "europe/berlin", false);
        KeyState.QuotaState qs = assertInstanceOf(KeyState.QuotaState.class, rl.inspect(q).orElseThrow());
        assertEquals("Europe/Berlin", qs.zone());
        assertEquals(3, qs.used());
        String sd = t.key("inspect-slide");
        rl.slide(sd, 10, 60, 2, false, null);
        assertEquals(2, ((KeyState.SlideState) rl.inspect(sd).orElseThrow()).units());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("targets")
    void errorsNameTheArgument(Targets.Target t) {
        RateLimiter rl = t.rl();
        ArgumentException count = assertThrows(ArgumentException.class, () -> rl.throttle(t.key("e"), 15, 0, 60));
        assertEquals("count", count.argument());
        assertEquals("count must be an integer from 1 to 4294967295", count.reply());
        ArgumentException tz = assertThrows(ArgumentException.class,
                () -> rl.quota(t.key("e"), 10, QuotaUnit.DAY, 1, "Mars/Olympus", false));
        assertEquals("TZ", tz.argument());
        ArgumentException spec = assertThrows(ArgumentException.class,
                () -> rl.allow(List.of(Entry.of(t.key("e"), Limit.slide(5, 0)))));
        assertEquals(1, spec.spec());
        assertEquals("window", spec.argument());

        String str = t.key("string");
        t.server().lettuce().sync().set(str.getBytes(), "x".getBytes());
        assertThrows(WrongTypeException.class, () -> rl.throttle(str, 1, 1, 1));
        assertThrows(IllegalArgumentException.class, () -> rl.allow(List.of(
                Entry.of(t.key("a"), Limit.slide(1, 1)), Entry.of(t.key("b"), Limit.slide(1, 1000).inMillis()))));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("targets")
    void asyncCallsAnswerTheSame(Targets.Target t) throws Exception {
        RateLimiter rl = t.rl();
        String k = t.key("async");
        Result r = rl.throttleAsync(k, 4, 10, 60).toCompletableFuture().get(5, TimeUnit.SECONDS);
        assertEquals(new Result(false, 5, 4, -1, 6), r);
        AllowResult a = rl.allowAsync(List.of(Entry.of(t.key("aa"), Limit.quota(3, QuotaUnit.HOUR))), 2, null)
                .toCompletableFuture().get(5, TimeUnit.SECONDS);
        assertEquals(1, a.remaining());
        CompletionException e = assertThrows(CompletionException.class,
                () -> rl.slideAsync(k + "x", 0, 60, 1, false, null).toCompletableFuture().join());
        ArgumentException arg = assertInstanceOf(ArgumentException.class, e.getCause());
        assertEquals("limit", arg.argument());
        assertNotNull(rl.inspectAsync(k).toCompletableFuture().get(5, TimeUnit.SECONDS).orElse(null));
        assertTrue(rl.releaseAsync(t.key("r"), "x").toCompletableFuture().get(5, TimeUnit.SECONDS) == Boolean.FALSE);
    }
}
