package io.github.redisratelimit;

/** A lease that was refused: retry after {@link #retryAfter()} (the limit's unit; -1: it can never fit). */
public class LeaseRefusedException extends RateLimitException {
    private static final long serialVersionUID = 1L;
    private final String key;
    private final long retryAfter;

    /**
     * @param key        the lease key
     * @param retryAfter the refusal's retry_after
     */
    public LeaseRefusedException(String key, long retryAfter) {
        super("lease on " + key + " refused: retry after " + retryAfter);
        this.key = key;
        this.retryAfter = retryAfter;
    }

    /** The lease key. */
    public String key() {
        return key;
    }

    /** The refusal's retry_after, in the limit's unit; -1 when the lease can never fit. */
    public long retryAfter() {
        return retryAfter;
    }
}
