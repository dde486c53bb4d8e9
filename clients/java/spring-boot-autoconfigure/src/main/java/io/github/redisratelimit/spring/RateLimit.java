package io.github.redisratelimit.spring;

import io.github.redisratelimit.QuotaUnit;
import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Repeatable;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Limits a method of a Spring bean (a controller's, a service's). All the
 * method's limits are decided in one RL.ALLOW before it runs; refused, it
 * throws {@link RateLimitedException} (the starter's handler answers 429
 * with the header fields), or calls the {@link #fallback} method.
 *
 * <pre>{@code
 * @PostMapping("/codes")
 * @RateLimit(name = "code-per-address", key = "'code:' + #request.email", kind = Kind.SLIDE, limit = 5, window = 3600)
 * @RateLimit(name = "code-per-ip", key = "'code-ip:' + #ip", kind = Kind.THROTTLE, maxBurst = 9, count = 10, period = 60)
 * public void sendCode(@RequestBody CodeRequest request, String ip) { ... }
 * }</pre>
 *
 * The key is a SpEL expression over the method's arguments ({@code #email},
 * {@code #user.id}; compiled with -parameters, as Spring Boot's build does),
 * prefixed by {@code ratelimit.key-prefix} ({@code rl:}). Keys of one method
 * share a hash slot on a cluster: put a hash tag in them.
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.METHOD)
@Repeatable(RateLimits.class)
public @interface RateLimit {
    /** The kinds of limit. */
    enum Kind {
        /** GCRA: count per period, bursts of maxBurst + 1. */
        THROTTLE,
        /** The exact sliding log: limit per window. */
        SLIDE,
        /** Time slices: limit per window in slices. */
        SLICE,
        /** Concurrency: limit at once, leases of ttl, released when the method returns. */
        LEASE,
        /** A calendar quota: limit per unit in tz. */
        QUOTA
    }

    /** @return the rule's name in the header fields and meters (default: the method's name and the index) */
    String name() default "";

    /** @return the key, a SpEL expression over the arguments */
    String key();

    /** @return the limit's kind */
    Kind kind();

    /** @return SLIDE, SLICE, LEASE, QUOTA: the limit */
    long limit() default 0;

    /** @return SLIDE, SLICE: the window */
    long window() default 0;

    /** @return SLIDE: PRECISION d, -1 for exact */
    long precision() default -1;

    /** @return SLICE: the slices */
    long slices() default 0;

    /** @return THROTTLE: max_burst */
    long maxBurst() default 0;

    /** @return THROTTLE: count */
    long count() default 0;

    /** @return THROTTLE: period */
    long period() default 0;

    /** @return LEASE: the ttl */
    long ttl() default 0;

    /** @return QUOTA: the unit */
    QuotaUnit unit() default QuotaUnit.DAY;

    /** @return QUOTA: the zone, empty for UTC */
    String tz() default "";

    /** @return times in milliseconds */
    boolean ms() default false;

    /** @return what a call costs */
    long quantity() default 1;

    /**
     * @return BLOCK b: after a refusal its key refuses every call for this
     * long (the limit's unit: seconds, ms with {@link #ms}); 0 for none
     */
    long block() default 0;

    /**
     * @return a SHADOW limit: decided and counted (shadow_limited), never
     * refusing the call, its header fields not sent
     */
    boolean shadow() default false;

    /**
     * @return a method of the same bean with the same parameters (and
     * optionally a last {@link RateLimitedException}) called instead when
     * refused; empty: throw. The first annotation's fallback is the method's.
     */
    String fallback() default "";
}
