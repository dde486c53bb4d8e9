package io.github.redisratelimit.spring;

/**
 * What the starter counts: each rule's decision (outcome allowed, limited)
 * and the decisions that failed (outcome error), and each decision's time.
 * With Micrometer on the class path and a MeterRegistry bean, the meters
 * {@code ratelimit.decisions} (tags rule, outcome) and
 * {@code ratelimit.decision.time} (tag outcome).
 */
public interface RateLimitMetrics {
    /** Counts nothing. */
    RateLimitMetrics NONE = new RateLimitMetrics() {
        @Override
        public void decided(String rule, boolean limited) {}

        @Override
        public void failed() {}

        @Override
        public void timed(String outcome, long nanos) {}
    };

    /**
     * @param rule    the rule's name
     * @param limited its own decision
     */
    void decided(String rule, boolean limited);

    /** A decision that could not be made. */
    void failed();

    /**
     * @param outcome allowed, limited or error
     * @param nanos   its time
     */
    void timed(String outcome, long nanos);
}
