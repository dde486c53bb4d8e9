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

    /**
     * The time after a refusal during which the key refuses everything
     * ({@code BLOCK b}), in the limit's unit; null for none.
     */
    Long block();

    /**
     * The units this limit decides and records in RL.ALLOW and RL.PEEK
     * instead of the call's QUANTITY ({@code UNITS n}); null: the call's.
     */
    Long units();

    /** Decided and shown, but never refusing the call ({@code SHADOW}, RL.ALLOW and RL.PEEK only). */
    boolean shadow();

    /**
     * The same limit with {@code BLOCK b}: after a refusal the key refuses
     * everything for {@code b} (in the limit's unit). The module refuses it
     * on a LEASE and with SHADOW.
     *
     * @param b the block's length
     * @return the limit
     */
    Limit withBlock(long b);

    /**
     * The same limit deciding {@code n} units in RL.ALLOW and RL.PEEK
     * ({@code UNITS n}), whatever the call's QUANTITY.
     *
     * @param n the units
     * @return the limit
     */
    Limit withUnits(long n);

    /**
     * The same limit as a SHADOW spec: decided, shown in the reply, never
     * refusing (RL.ALLOW and RL.PEEK only).
     *
     * @return the limit
     */
    Limit asShadow();

    /**
     * The same limit enforced (without SHADOW).
     *
     * @return the limit
     */
    Limit enforced();

    /**
     * The spec as RL.ALLOW and RL.PEEK take it: the kind's word, its numbers,
     * its options, then {@code [BLOCK b] [UNITS n] [SHADOW]}.
     */
    List<String> spec();

    /**
     * The spec as RL.REFUND and RL.CHARGE take it: the kind's word, its
     * numbers and its options, without BLOCK, UNITS and SHADOW.
     */
    List<String> baseSpec();

    /** The arguments of the kind's own command after the key and before quantity. */
    List<String> commandArgs();

    /**
     * The options of the kind's own command after quantity and MS
     * ({@code PRECISION d}, {@code TZ zone}, then {@code BLOCK b}; UNITS and
     * SHADOW too when set, which the module refuses outside RL.ALLOW).
     */
    List<String> commandOptions();

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
