package io.github.redisratelimit;

import java.util.List;

/**
 * A refused {@link RateLimiter#acquire(String, Throttle, java.time.Duration)}
 * or {@link RateLimiter#acquireAll}: no turn within the wait it could ask
 * for (its maxWait, cut to its deadline), the key is blocked, or the
 * request can never fit. Nothing was recorded. Not to be confused with the
 * Spring starter's {@code io.github.redisratelimit.spring.RateLimitedException}
 * (a refused {@code @RateLimit} method).
 */
public class RateLimitedException extends RateLimitException {
    private static final long serialVersionUID = 1L;
    private final List<String> keys;
    private final transient Result result;

    /**
     * @param keys   the keys asked for
     * @param result the reply's five fields (times in ms: acquire sends MS)
     */
    public RateLimitedException(List<String> keys, Result result) {
        super("rate limited on " + String.join(", ", keys) + ": "
                + (result.retryAfter() < 0 ? "it can never fit" : "retry after " + result.retryAfter() + " ms"));
        this.keys = List.copyOf(keys);
        this.result = result;
    }

    /** The keys asked for. */
    public List<String> keys() {
        return keys;
    }

    /** The reply's five fields (the binding limit's for acquireAll), times in milliseconds. */
    public Result result() {
        return result;
    }

    /** Milliseconds until the same request would get a turn at once; -1 when it can never fit. */
    public long retryAfter() {
        return result.retryAfter();
    }
}
