package io.github.redisratelimit;

import java.util.List;

/**
 * A concurrency limit (RL.LEASE): at most {@code limit} held at once, each
 * lease expiring {@code ttl} after it was taken or renewed.
 *
 * @param limit  how many at once
 * @param ttl    a lease's life, in seconds (milliseconds with ms)
 * @param ms     times in milliseconds
 * @param block  BLOCK b, which the module refuses on a lease (passed through), or null
 * @param units  UNITS n (RL.ALLOW, RL.PEEK), or null
 * @param shadow SHADOW (RL.ALLOW, RL.PEEK)
 */
public record Lease(long limit, long ttl, boolean ms, Long block, Long units, boolean shadow) implements Limit {
    /**
     * The limit without UNITS or SHADOW.
     *
     * @param limit how many at once
     * @param ttl   a lease's life
     * @param ms    times in milliseconds
     */
    public Lease(long limit, long ttl, boolean ms) {
        this(limit, ttl, ms, null, null, false);
    }

    /** The same limit with its times in milliseconds. */
    public Lease inMillis() {
        return new Lease(limit, ttl, true, block, units, shadow);
    }

    /** {@inheritDoc} The module answers {@code ERR LEASE takes no BLOCK}. */
    @Override
    public Lease withBlock(long b) {
        return new Lease(limit, ttl, ms, b, units, shadow);
    }

    @Override
    public Lease withUnits(long n) {
        return new Lease(limit, ttl, ms, block, n, shadow);
    }

    @Override
    public Lease asShadow() {
        return new Lease(limit, ttl, ms, block, units, true);
    }

    @Override
    public Lease enforced() {
        return new Lease(limit, ttl, ms, block, units, false);
    }

    @Override
    public String command() {
        return "LEASE";
    }

    @Override
    public List<String> spec() {
        return SpecOptions.append(baseSpec(), block, units, shadow);
    }

    @Override
    public List<String> baseSpec() {
        return List.of("LEASE", Long.toString(limit), Long.toString(ttl));
    }

    @Override
    public List<String> commandArgs() {
        return List.of(Long.toString(limit), Long.toString(ttl));
    }

    @Override
    public List<String> commandOptions() {
        return SpecOptions.append(List.of(), block, units, shadow);
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
