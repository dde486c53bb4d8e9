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
 */
public record Slice(long limit, long window, long slices, boolean ms) implements Limit {
    /** The same limit with its times in milliseconds. */
    public Slice inMillis() {
        return new Slice(limit, window, slices, true);
    }

    @Override
    public String command() {
        return "SLICE";
    }

    @Override
    public List<String> spec() {
        return List.of("SLICE", Long.toString(limit), Long.toString(window), Long.toString(slices));
    }

    @Override
    public List<String> commandArgs() {
        return List.of(Long.toString(limit), Long.toString(window), Long.toString(slices));
    }

    @Override
    public long windowSeconds() {
        return Units.seconds(window, ms);
    }
}
