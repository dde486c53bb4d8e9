package io.github.redisratelimit;

import java.util.List;

/**
 * The sliding window of time slices (RL.SLICE): never more than
 * {@code limit} units in any interval of {@code window}.
 *
 * @param limit  units per window
 * @param window the window, in seconds (milliseconds with ms)
 * @param slices how many slices the window is cut into
 * @param ms     times in milliseconds
 * @param block  BLOCK b in the limit's unit, or null
 * @param units  UNITS n (RL.ALLOW, RL.PEEK), or null
 * @param shadow SHADOW (RL.ALLOW, RL.PEEK)
 */
public record Slice(long limit, long window, long slices, boolean ms, Long block, Long units, boolean shadow)
        implements Limit {
    /**
     * The limit without BLOCK, UNITS or SHADOW.
     *
     * @param limit  units per window
     * @param window the window
     * @param slices the slices
     * @param ms     times in milliseconds
     */
    public Slice(long limit, long window, long slices, boolean ms) {
        this(limit, window, slices, ms, null, null, false);
    }

    /** The same limit with its times in milliseconds. */
    public Slice inMillis() {
        return new Slice(limit, window, slices, true, block, units, shadow);
    }

    @Override
    public Slice withBlock(long b) {
        return new Slice(limit, window, slices, ms, b, units, shadow);
    }

    @Override
    public Slice withUnits(long n) {
        return new Slice(limit, window, slices, ms, block, n, shadow);
    }

    @Override
    public Slice asShadow() {
        return new Slice(limit, window, slices, ms, block, units, true);
    }

    @Override
    public Slice enforced() {
        return new Slice(limit, window, slices, ms, block, units, false);
    }

    @Override
    public String command() {
        return "SLICE";
    }

    @Override
    public List<String> spec() {
        return SpecOptions.append(baseSpec(), block, units, shadow);
    }

    @Override
    public List<String> baseSpec() {
        return List.of("SLICE", Long.toString(limit), Long.toString(window), Long.toString(slices));
    }

    @Override
    public List<String> commandArgs() {
        return List.of(Long.toString(limit), Long.toString(window), Long.toString(slices));
    }

    @Override
    public List<String> commandOptions() {
        return SpecOptions.append(List.of(), block, units, shadow);
    }

    @Override
    public long windowSeconds() {
        return Units.seconds(window, ms);
    }
}
