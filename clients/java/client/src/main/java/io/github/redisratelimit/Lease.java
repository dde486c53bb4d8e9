package io.github.redisratelimit;

import java.util.List;

/**
 * A concurrency limit (RL.LEASE): at most {@code limit} held at once, each
 * lease expiring {@code ttl} after it was taken or renewed.
 *
 * @param limit how many at once
 * @param ttl   a lease's life, in seconds (milliseconds with ms)
 * @param ms    times in milliseconds
 */
public record Lease(long limit, long ttl, boolean ms) implements Limit {
    /** The same limit with its times in milliseconds. */
    public Lease inMillis() {
        return new Lease(limit, ttl, true);
    }

    @Override
    public String command() {
        return "LEASE";
    }

    @Override
    public List<String> spec() {
        return List.of("LEASE", Long.toString(limit), Long.toString(ttl));
    }

    @Override
    public List<String> commandArgs() {
        return List.of(Long.toString(limit), Long.toString(ttl));
    }

    @Override
    public long windowSeconds() {
        return -1;
    }

    /** The lease's ttl in milliseconds. */
    public long ttlMillis() {
        return ms ? ttl : Math.multiplyExact(ttl, 1000L);
    }
}
