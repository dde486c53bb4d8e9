package io.github.redisratelimit.spring;

/**
 * What the starter counts (docs/metrics.md): each matched rule's own
 * outcome per request, and the time of each request's decision. With
 * Micrometer on the class path and a MeterRegistry bean,
 * {@link MicrometerMetrics}: the counter {@code ratelimit.decisions} (tags
 * {@code ratelimit.rule}, {@code ratelimit.result}) and the timer
 * {@code ratelimit.decision.duration} (tag {@code ratelimit.result}).
 */
public interface RateLimitMetrics {
    /** Counts nothing. */
    RateLimitMetrics NONE = new RateLimitMetrics() {
        @Override
        public void decided(String rule, String result) {}

        @Override
        public void timed(String result, long nanos) {}
    };

    /**
     * One matched rule of one request.
     *
     * @param rule   the rule's name
     * @param result its own outcome: {@code allowed}, {@code limited} (an enforced
     *               rule that refused), {@code shadow_limited} (a shadow rule that
     *               would have refused) or {@code error} (the call failed)
     */
    void decided(String rule, String result);

    /**
     * One request's decision that called Redis.
     *
     * @param result the request's: {@code allowed}, {@code limited} or {@code error}
     * @param nanos  its time
     */
    void timed(String result, long nanos);
}
