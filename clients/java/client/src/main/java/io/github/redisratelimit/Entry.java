package io.github.redisratelimit;

/**
 * A limit on a key, one of the limits of RL.ALLOW or RL.PEEK.
 *
 * @param key   the limiter's key (on a cluster, every key of one call in one slot: {@code {user:42}})
 * @param limit the limit it is checked against
 */
public record Entry(String key, Limit limit) {
    /**
     * @param key   the key
     * @param limit its limit
     * @return the entry
     */
    public static Entry of(String key, Limit limit) {
        return new Entry(key, limit);
    }
}
