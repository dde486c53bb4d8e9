package io.github.redisratelimit;

import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A lease taken by {@link RateLimiter#acquire}: held until {@link #close()},
 * renewed meanwhile at a fraction of its ttl. Closing releases it exactly
 * once (RL.RELEASE), whatever happened: the block's exception, the thread's
 * interrupt (the release is sent with the interrupt flag cleared, then the
 * flag is set again), a second close (nothing). A renewal refused (the lease
 * had expired and its slot was taken) marks it {@link #lost()}.
 */
public final class HeldLease implements AutoCloseable {
    private final RateLimiter limiter;
    private final String key;
    private final Lease limit;
    private final long quantity;
    private final String id;
    private final Result result;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final AtomicBoolean renewing = new AtomicBoolean();
    private volatile boolean lost;
    private volatile long renewals;
    private final ScheduledFuture<?> timer;

    HeldLease(RateLimiter limiter, String key, Lease limit, long quantity, String id, Result result,
              ScheduledExecutorService executor, double renewEvery) {
        this.limiter = limiter;
        this.key = key;
        this.limit = limit;
        this.quantity = quantity;
        this.id = id;
        this.result = result;
        long every = Math.max(1, (long) (limit.ttlMillis() * renewEvery));
        this.timer = executor.scheduleAtFixedRate(this::renew, every, every, TimeUnit.MILLISECONDS);
    }

    private void renew() {
        if (closed.get() || !renewing.compareAndSet(false, true)) {
            return;
        }
        limiter.takeAsync(key, limit, quantity, id).whenComplete((r, err) -> {
            renewing.set(false);
            if (err == null) {
                renewals++;
                if (r.limited() && !closed.get()) {
                    lost = true;
                }
            }
        });
    }

    /** The lease's id. */
    public String id() {
        return id;
    }

    /** The lease key. */
    public String key() {
        return key;
    }

    /** The grant's five fields. */
    public Result result() {
        return result;
    }

    /** A renewal was refused: the lease expired and its slot went to another. */
    public boolean lost() {
        return lost;
    }

    /** How many renewals the server answered. */
    public long renewals() {
        return renewals;
    }

    /** Whether {@link #close()} ran. */
    public boolean closed() {
        return closed.get();
    }

    /**
     * Releases the lease (RL.RELEASE), once.
     *
     * @throws RateLimitException when the release could not be sent (the lease then expires at its ttl)
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        timer.cancel(false);
        boolean interrupted = Thread.interrupted();
        try {
            limiter.release(key, id);
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
