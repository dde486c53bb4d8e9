package io.github.redisratelimit;

/**
 * A limit with its times in milliseconds (MS), the same limit: a pure unit
 * conversion for the calls that send MS ({@code acquire}, whose MAXWAIT
 * and waits are in ms). A time too large for a long stays too large
 * (Long.MAX_VALUE), for the module to refuse with its own error.
 */
final class Millis {
    private Millis() {}

    private static long ms(long seconds) {
        if (seconds > Long.MAX_VALUE / 1000) {
            return Long.MAX_VALUE;
        }
        if (seconds < Long.MIN_VALUE / 1000) {
            return Long.MIN_VALUE;
        }
        return seconds * 1000;
    }

    private static Long ms(Long seconds) {
        return seconds == null ? null : ms(seconds.longValue());
    }

    static Limit of(Limit limit) {
        if (limit.ms()) {
            return limit;
        }
        if (limit instanceof Throttle t) {
            return new Throttle(t.maxBurst(), t.count(), ms(t.period()), true, ms(t.block()), t.units(), t.shadow());
        }
        if (limit instanceof Slide s) {
            return new Slide(s.limit(), ms(s.window()), ms(s.precision()), true, ms(s.block()), s.units(),
                    s.shadow());
        }
        if (limit instanceof Slice s) {
            return new Slice(s.limit(), ms(s.window()), s.slices(), true, ms(s.block()), s.units(), s.shadow());
        }
        if (limit instanceof Lease l) {
            return new Lease(l.limit(), ms(l.ttl()), true, ms(l.block()), l.units(), l.shadow());
        }
        Quota q = (Quota) limit;
        return new Quota(q.limit(), q.unit(), q.tz(), true, ms(q.block()), q.units(), q.shadow());
    }
}
