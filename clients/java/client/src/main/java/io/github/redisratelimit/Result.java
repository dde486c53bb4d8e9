package io.github.redisratelimit;

/**
 * The five fields every limiter replies with (and RL.REFUND), in the
 * module's order. Times are in the limit's unit: seconds, or milliseconds
 * with {@code MS}.
 *
 * @param limited    the request was refused
 * @param limit      the capacity: maxBurst + 1 for THROTTLE, limit for the others
 * @param remaining  units that could still be taken right now, after this request
 * @param retryAfter when limited, the time until this same request would pass,
 *                   rounded up; -1 when allowed, and when it can never fit
 * @param resetAfter the time until the limiter is back to full capacity; 0 when it is
 */
public record Result(boolean limited, long limit, long remaining, long retryAfter, long resetAfter) {
    /** The request was allowed ({@code !limited()}). */
    public boolean allowed() {
        return !limited;
    }
}
