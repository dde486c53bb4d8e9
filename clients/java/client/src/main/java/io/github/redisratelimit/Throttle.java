package io.github.redisratelimit;

import java.math.BigInteger;
import java.util.List;

/**
 * GCRA (RL.THROTTLE): {@code count} per {@code period}, in bursts of up to
 * {@code maxBurst + 1} (the capacity). With {@code ms} the period is in
 * milliseconds.
 *
 * @param maxBurst the burst beyond one (capacity = maxBurst + 1)
 * @param count    requests per period
 * @param period   the period, in seconds (milliseconds with ms)
 * @param ms       times in milliseconds
 * @param block    BLOCK b in the limit's unit, or null
 * @param units    UNITS n (RL.ALLOW, RL.PEEK), or null
 * @param shadow   SHADOW (RL.ALLOW, RL.PEEK)
 */
public record Throttle(long maxBurst, long count, long period, boolean ms, Long block, Long units, boolean shadow)
        implements Limit {
    /**
     * The limit without BLOCK, UNITS or SHADOW.
     *
     * @param maxBurst the burst beyond one
     * @param count    requests per period
     * @param period   the period
     * @param ms       times in milliseconds
     */
    public Throttle(long maxBurst, long count, long period, boolean ms) {
        this(maxBurst, count, period, ms, null, null, false);
    }

    /** The same limit with its times in milliseconds (its BLOCK too). */
    public Throttle inMillis() {
        return new Throttle(maxBurst, count, period, true, block, units, shadow);
    }

    @Override
    public Throttle withBlock(long b) {
        return new Throttle(maxBurst, count, period, ms, b, units, shadow);
    }

    @Override
    public Throttle withUnits(long n) {
        return new Throttle(maxBurst, count, period, ms, block, n, shadow);
    }

    @Override
    public Throttle asShadow() {
        return new Throttle(maxBurst, count, period, ms, block, units, true);
    }

    @Override
    public Throttle enforced() {
        return new Throttle(maxBurst, count, period, ms, block, units, false);
    }

    @Override
    public String command() {
        return "THROTTLE";
    }

    @Override
    public List<String> spec() {
        return SpecOptions.append(baseSpec(), block, units, shadow);
    }

    @Override
    public List<String> baseSpec() {
        return List.of("THROTTLE", Long.toString(maxBurst), Long.toString(count), Long.toString(period));
    }

    @Override
    public List<String> commandArgs() {
        return List.of(Long.toString(maxBurst), Long.toString(count), Long.toString(period));
    }

    @Override
    public List<String> commandOptions() {
        return SpecOptions.append(List.of(), block, units, shadow);
    }

    /** capacity x period / count, rounded up, in seconds (at least 1). */
    @Override
    public long windowSeconds() {
        if (count <= 0) {
            return 1;
        }
        BigInteger divisor = BigInteger.valueOf(count).multiply(BigInteger.valueOf(ms ? 1000 : 1));
        BigInteger product = BigInteger.valueOf(maxBurst).add(BigInteger.ONE).multiply(BigInteger.valueOf(period));
        BigInteger w = product.add(divisor).subtract(BigInteger.ONE).divide(divisor);
        return Math.max(1, w.min(BigInteger.valueOf(Long.MAX_VALUE)).longValue());
    }
}
