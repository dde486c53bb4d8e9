package io.github.redisratelimit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The lease as AutoCloseable against real servers: taken on open, renewed
 * while held (a 600 ms lease kept for 1.5 s), released once on close, on
 * an exception and on an interrupt; refused with retryAfter.
 */
class HeldLeaseTest {
    static List<Targets.Target> targets() {
        return Targets.lettuceOnly();
    }

    private static long held(RateLimiter rl, String key) {
        return rl.inspect(key).map(s -> ((KeyState.LeaseState) s).held()).orElse(0L);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("targets")
    void heldWhileOpenRenewedAndReleasedOnClose(Targets.Target t) throws Exception {
        RateLimiter rl = t.rl();
        String k = t.key("held");
        Lease limit = Limit.lease(1, 600).inMillis();
        HeldLease lease;
        try (HeldLease l = rl.acquire(k, limit)) {
            lease = l;
            assertEquals(1, held(rl, k));
            // Past two ttls: only the renewals keep it.
            Thread.sleep(1500);
            assertTrue(l.renewals() >= 3, "renewals: " + l.renewals());
            assertFalse(l.lost());
            assertEquals(1, held(rl, k));
            LeaseRefusedException refused = assertThrows(LeaseRefusedException.class, () -> rl.acquire(k, limit));
            assertTrue(refused.retryAfter() > 0 && refused.retryAfter() <= 600, "retryAfter " + refused.retryAfter());
        }
        assertTrue(lease.closed());
        assertEquals(0, held(rl, k));
        lease.close();
        assertEquals(0, held(rl, k), "a second close changes nothing");
        long renewals = lease.renewals();
        Thread.sleep(400);
        assertEquals(renewals, lease.renewals(), "no renewal after close");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("targets")
    void releasedOnExceptionAndOnInterrupt(Targets.Target t) throws Exception {
        RateLimiter rl = t.rl();
        String k = t.key("held-exc");
        Lease limit = Limit.lease(1, 30);
        assertThrows(IllegalStateException.class, () -> {
            try (HeldLease l = rl.acquire(k, limit)) {
                assertEquals(1, held(rl, k), l.id());
                throw new IllegalStateException("the job failed");
            }
        });
        assertEquals(0, held(rl, k));

        AtomicReference<Boolean> interruptedAfter = new AtomicReference<>();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread worker = new Thread(() -> {
            try (HeldLease l = rl.acquire(k, limit)) {
                Thread.sleep(60_000 + l.result().remaining());
            } catch (InterruptedException e) {
                interruptedAfter.set(Thread.currentThread().isInterrupted());
            } catch (Throwable e) {
                failure.set(e);
            }
        });
        worker.start();
        long until = System.nanoTime() + 5_000_000_000L;
        while (held(rl, k) == 0 && System.nanoTime() < until) {
            Thread.sleep(10);
        }
        assertEquals(1, held(rl, k));
        worker.interrupt();
        worker.join(5000);
        assertEquals(null, failure.get());
        assertEquals(Boolean.FALSE, interruptedAfter.get());
        assertEquals(0, held(rl, k), "released although the thread was interrupted");

        // Interrupted inside the block, not in a wait: the release is still sent, the flag kept.
        try (HeldLease l = rl.acquire(k, limit)) {
            assertEquals(1, held(rl, k), l.id());
            Thread.currentThread().interrupt();
        } finally {
            assertTrue(Thread.interrupted(), "the interrupt flag is kept");
        }
        assertEquals(0, held(rl, k));
    }
}
