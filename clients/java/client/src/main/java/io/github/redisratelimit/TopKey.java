package io.github.redisratelimit;

/**
 * One key of RL.TOP's reply: a key refused often on this node recently.
 *
 * @param key           the key (its bytes as UTF-8)
 * @param refusals      its refusals, decayed by the module's half-life and rounded down
 * @param lastRefusalMs its last refusal, Unix milliseconds
 */
public record TopKey(String key, long refusals, long lastRefusalMs) {}
