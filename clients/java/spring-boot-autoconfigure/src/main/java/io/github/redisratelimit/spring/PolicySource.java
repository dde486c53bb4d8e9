package io.github.redisratelimit.spring;

import java.util.concurrent.atomic.AtomicReference;

/**
 * Where the filter reads its policy, at every request: declare a bean of
 * this type to change the limits at run time without a restart (the
 * filter uses a new policy from its next request). The default holds the
 * policy of the {@code ratelimit.*} properties, and can be replaced with
 * {@link #set}.
 */
public class PolicySource {
    private final AtomicReference<Policy> current;

    /** @param initial the first policy */
    public PolicySource(Policy initial) {
        this.current = new AtomicReference<>(initial);
    }

    /** @return the policy in force */
    public Policy get() {
        return current.get();
    }

    /**
     * Puts a new policy in force, from the next request on.
     *
     * @param policy the new policy (checked when made)
     */
    public void set(Policy policy) {
        current.set(policy);
    }
}
