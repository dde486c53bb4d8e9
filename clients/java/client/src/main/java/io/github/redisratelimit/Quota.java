package io.github.redisratelimit;

import java.util.ArrayList;
import java.util.List;

/**
 * A calendar quota (RL.QUOTA): at most {@code limit} units per calendar
 * {@code unit} on the local clock of {@code tz}.
 *
 * @param limit units per period
 * @param unit  the calendar unit
 * @param tz    TZ zone: an IANA name, UTC or an offset such as {@code +05:30}; null for UTC
 * @param ms    retry_after and reset_after in milliseconds
 */
public record Quota(long limit, QuotaUnit unit, String tz, boolean ms) implements Limit {
    /** The same quota on the clock of {@code zone}. */
    public Quota in(String zone) {
        return new Quota(limit, unit, zone, ms);
    }

    /** The same quota answering milliseconds. */
    public Quota inMillis() {
        return new Quota(limit, unit, tz, true);
    }

    @Override
    public String command() {
        return "QUOTA";
    }

    @Override
    public List<String> spec() {
        List<String> words = new ArrayList<>(List.of("QUOTA", Long.toString(limit), unit.name()));
        words.addAll(commandOptions());
        return List.copyOf(words);
    }

    @Override
    public List<String> commandArgs() {
        return List.of(Long.toString(limit), unit.name());
    }

    @Override
    public List<String> commandOptions() {
        return tz == null ? List.of() : List.of("TZ", tz);
    }

    @Override
    public long windowSeconds() {
        return -1;
    }
}
