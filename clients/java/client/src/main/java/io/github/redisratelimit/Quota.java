package io.github.redisratelimit;

import java.util.ArrayList;
import java.util.List;

/**
 * A calendar quota (RL.QUOTA): at most {@code limit} units per calendar
 * {@code unit} on the local clock of {@code tz}.
 *
 * @param limit  units per period
 * @param unit   the calendar unit
 * @param tz     TZ zone: an IANA name, UTC or an offset such as {@code +05:30}; null for UTC
 * @param ms     retry_after, reset_after and BLOCK in milliseconds
 * @param block  BLOCK b in the limit's unit, or null
 * @param units  UNITS n (RL.ALLOW, RL.PEEK), or null
 * @param shadow SHADOW (RL.ALLOW, RL.PEEK)
 */
public record Quota(long limit, QuotaUnit unit, String tz, boolean ms, Long block, Long units, boolean shadow)
        implements Limit {
    /**
     * The quota without BLOCK, UNITS or SHADOW.
     *
     * @param limit units per period
     * @param unit  the calendar unit
     * @param tz    TZ zone, or null
     * @param ms    times in milliseconds
     */
    public Quota(long limit, QuotaUnit unit, String tz, boolean ms) {
        this(limit, unit, tz, ms, null, null, false);
    }

    /** The same quota on the clock of {@code zone}. */
    public Quota in(String zone) {
        return new Quota(limit, unit, zone, ms, block, units, shadow);
    }

    /** The same quota answering milliseconds. */
    public Quota inMillis() {
        return new Quota(limit, unit, tz, true, block, units, shadow);
    }

    @Override
    public Quota withBlock(long b) {
        return new Quota(limit, unit, tz, ms, b, units, shadow);
    }

    @Override
    public Quota withUnits(long n) {
        return new Quota(limit, unit, tz, ms, block, n, shadow);
    }

    @Override
    public Quota asShadow() {
        return new Quota(limit, unit, tz, ms, block, units, true);
    }

    @Override
    public Quota enforced() {
        return new Quota(limit, unit, tz, ms, block, units, false);
    }

    @Override
    public String command() {
        return "QUOTA";
    }

    @Override
    public List<String> spec() {
        return SpecOptions.append(baseSpec(), block, units, shadow);
    }

    @Override
    public List<String> baseSpec() {
        List<String> words = new ArrayList<>(List.of("QUOTA", Long.toString(limit), unit.name()));
        if (tz != null) {
            words.add("TZ");
            words.add(tz);
        }
        return List.copyOf(words);
    }

    @Override
    public List<String> commandArgs() {
        return List.of(Long.toString(limit), unit.name());
    }

    @Override
    public List<String> commandOptions() {
        List<String> words = tz == null ? List.of() : List.of("TZ", tz);
        return SpecOptions.append(words, block, units, shadow);
    }

    @Override
    public long windowSeconds() {
        return -1;
    }
}
