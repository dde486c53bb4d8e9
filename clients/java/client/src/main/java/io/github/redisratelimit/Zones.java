package io.github.redisratelimit;

import java.time.Instant;
import java.time.ZoneId;
import java.time.zone.ZoneOffsetTransition;
import java.time.zone.ZoneRules;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The one thing a script cannot know: a time zone's UTC offsets and the
 * instants they change, around now, from Java's zone database
 * (CONTRACT: {@code written|canonical|lo|off0(|t|off)*}). The names are
 * matched ASCII case-insensitively, as the module matches them.
 */
final class Zones {
    static final long SPAN = 400L * 86400;
    private static final Map<String, String> CANONICAL = canonical();

    private Zones() {}

    private static Map<String, String> canonical() {
        Map<String, String> m = new HashMap<>();
        Set<String> ids = ZoneId.getAvailableZoneIds();
        for (String id : ids) {
            m.put(id.toLowerCase(Locale.ROOT), id);
        }
        return Map.copyOf(m);
    }

    /** Java's spelling of the zone written {@code name}, or null when the database does not know it. */
    static String canonicalName(String name) {
        return CANONICAL.get(name.toLowerCase(Locale.ROOT));
    }

    /**
     * The head's segment for the zone written {@code written}, around
     * {@code nowSeconds}, or null when the zone database does not know it.
     */
    static String segment(String written, long nowSeconds) {
        String canonical = canonicalName(written);
        if (canonical == null) {
            return null;
        }
        ZoneRules rules = ZoneId.of(canonical).getRules();
        long lo = nowSeconds - SPAN;
        long hi = nowSeconds + SPAN;
        StringBuilder b = new StringBuilder(written).append('|').append(canonical).append('|').append(lo)
                .append('|').append(rules.getOffset(Instant.ofEpochSecond(lo)).getTotalSeconds());
        Instant at = Instant.ofEpochSecond(lo);
        while (true) {
            ZoneOffsetTransition t = rules.nextTransition(at);
            if (t == null || t.toEpochSecond() > hi) {
                break;
            }
            b.append('|').append(t.toEpochSecond()).append('|').append(t.getOffsetAfter().getTotalSeconds());
            at = t.getInstant();
        }
        return b.toString();
    }
}
