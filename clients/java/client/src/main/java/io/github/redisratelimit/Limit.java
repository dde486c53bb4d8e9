package io.github.redisratelimit;

import java.util.List;

/**
 * A limit of one kind, as an immutable value: {@link Throttle} (GCRA,
 * RL.THROTTLE), {@link Slide} (the exact sliding log, RL.SLIDE), {@link Slice}
 * (time slices, RL.SLICE), {@link Lease} (concurrency, RL.LEASE) and
 * {@link Quota} (calendar quotas, RL.QUOTA). A limit is used alone
 * ({@link RateLimiter#take}) or with others in one atomic decision
 * ({@link RateLimiter#allow}, {@link RateLimiter#peek}), and given back to
 * ({@link RateLimiter#refund}).
 *
 * <p>Nothing is checked here: the numbers go to the module (or the Lua
 * scripts) as their decimal text, and a bad one comes back as an
 * {@link ArgumentException} naming the argument, with the module's text.
 */
public sealed interface Limit permits Throttle, Slide, Slice, Lease, Quota {
    /** Times in milliseconds (the module's {@code MS} flag) instead of seconds. */
    boolean ms();

    /** The module's command for this kind alone, without prefix: {@code THROTTLE}, {@code SLIDE}, ... */
    String command();

    /** The spec as RL.ALLOW, RL.PEEK and RL.REFUND take it: the kind's word, its numbers, its options. */
    List<String> spec();

    /** The arguments of the kind's own command after the key and before quantity. */
    List<String> commandArgs();

    /** The options of the kind's own command after quantity and MS ({@code PRECISION d}, {@code TZ zone}). */
    default List<String> commandOptions() {
        return List.of();
    }

    /**
     * The window of the {@code RateLimit-Policy} field ({@code w}), in
     * seconds: the window of SLIDE and SLICE, the time THROTTLE's capacity
     * takes to refill; -1 for LEASE and QUOTA, which have none.
     */
    long windowSeconds();

    /** RL.THROTTLE's limit: {@code count} per {@code period} (seconds), bursts of {@code maxBurst + 1}. */
    static Throttle throttle(long maxBurst, long count, long period) {
        return new Throttle(maxBurst, count, period, false);
    }

    /** RL.SLIDE's limit: at most {@code limit} in any {@code window} (seconds). */
    static Slide slide(long limit, long window) {
        return new Slide(limit, window, null, false);
    }

    /** RL.SLICE's limit: at most {@code limit} per {@code window} (seconds), in {@code slices} slices. */
    static Slice slice(long limit, long window, long slices) {
        return new Slice(limit, window, slices, false);
    }

    /** RL.LEASE's limit: at most {@code limit} held at once, each lease lasting {@code ttl} (seconds). */
    static Lease lease(long limit, long ttl) {
        return new Lease(limit, ttl, false);
    }

    /** RL.QUOTA's limit: at most {@code limit} per calendar {@code unit}, in UTC. */
    static Quota quota(long limit, QuotaUnit unit) {
        return new Quota(limit, unit, null, false);
    }
}
