package io.github.redisratelimit;

/** Times of the replies and limits in seconds, rounded up as the module rounds. */
final class Units {
    private Units() {}

    /** A limit's time in whole seconds (at least 1 when given in ms). */
    static long seconds(long value, boolean ms) {
        return ms ? Math.max(1, ceilDiv(value, 1000)) : value;
    }

    /** A reply's time in seconds: ms rounded up; -1 and 0 stay. */
    static long replySeconds(long value, boolean ms) {
        return ms && value > 0 ? ceilDiv(value, 1000) : value;
    }

    static long ceilDiv(long a, long b) {
        return -Math.floorDiv(-a, b);
    }
}
