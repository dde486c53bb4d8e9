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
 * @param block     BLOCK b in the limit's unit, or null
 * @param units     UNITS n (RL.ALLOW, RL.PEEK), or null
 * @param shadow    SHADOW (RL.ALLOW, RL.PEEK)
 */
public record Slide(long limit, long window, Long precision, boolean ms, Long block, Long units, boolean shadow)
        implements Limit {
    /**
     * The limit without BLOCK, UNITS or SHADOW.
     *
     * @param limit     units per window
     * @param window    the window
     * @param precision PRECISION d, or null
     * @param ms        times in milliseconds
     */
    public Slide(long limit, long window, Long precision, boolean ms) {
        this(limit, window, precision, ms, null, null, false);
    }

    /** The same limit with its times in milliseconds. */
    public Slide inMillis() {
        return new Slide(limit, window, precision, true, block, units, shadow);
    }

    /** The same limit with {@code PRECISION d}. */
    public Slide withPrecision(long d) {
        return new Slide(limit, window, d, ms, block, units, shadow);
    }

    @Override
    public Slide withBlock(long b) {
        return new Slide(limit, window, precision, ms, b, units, shadow);
    }

    @Override
    public Slide withUnits(long n) {
        return new Slide(limit, window, precision, ms, block, n, shadow);
    }

    @Override
    public Slide asShadow() {
        return new Slide(limit, window, precision, ms, block, units, true);
    }

    @Override
    public Slide enforced() {
        return new Slide(limit, window, precision, ms, block, units, false);
    }

    @Override
    public String command() {
        return "SLIDE";
    }

    @Override
    public List<String> spec() {
        return SpecOptions.append(baseSpec(), block, units, shadow);
    }

    @Override
    public List<String> baseSpec() {
        List<String> words = new ArrayList<>(List.of("SLIDE", Long.toString(limit), Long.toString(window)));
        if (precision != null) {
            words.add("PRECISION");
            words.add(precision.toString());
        }
        return List.copyOf(words);
    }

    @Override
    public List<String> commandArgs() {
        return List.of(Long.toString(limit), Long.toString(window));
    }

    @Override
    public List<String> commandOptions() {
        List<String> words = precision == null ? List.of() : List.of("PRECISION", precision.toString());
        return SpecOptions.append(words, block, units, shadow);
    }

    @Override
    public long windowSeconds() {
        return Units.seconds(window, ms);
    }
}
