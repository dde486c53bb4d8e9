package io.github.redisratelimit;

import java.util.ArrayList;
import java.util.List;

/**
 * The exact sliding log (RL.SLIDE): at most {@code limit} units in any
 * {@code window}.
 *
 * @param limit     units per window
 * @param window    the window, in seconds (milliseconds with ms)
 * @param precision PRECISION d in the window's unit, or null for exact
 * @param ms        times in milliseconds
 */
public record Slide(long limit, long window, Long precision, boolean ms) implements Limit {
    /** The same limit with its times in milliseconds. */
    public Slide inMillis() {
        return new Slide(limit, window, precision, true);
    }

    /** The same limit with {@code PRECISION d}. */
    public Slide withPrecision(long d) {
        return new Slide(limit, window, d, ms);
    }

    @Override
    public String command() {
        return "SLIDE";
    }

    @Override
    public List<String> spec() {
        List<String> words = new ArrayList<>(List.of("SLIDE", Long.toString(limit), Long.toString(window)));
        words.addAll(commandOptions());
        return List.copyOf(words);
    }

    @Override
    public List<String> commandArgs() {
        return List.of(Long.toString(limit), Long.toString(window));
    }

    @Override
    public List<String> commandOptions() {
        return precision == null ? List.of() : List.of("PRECISION", precision.toString());
    }

    @Override
    public long windowSeconds() {
        return Units.seconds(window, ms);
    }
}
