package io.github.redisratelimit;

/** A calendar unit of RL.QUOTA. */
public enum QuotaUnit {
    /** Second 0 of each minute. */
    MINUTE,
    /** Minute 0 of each hour. */
    HOUR,
    /** 00:00 of each day. */
    DAY,
    /** Monday 00:00 (ISO 8601). */
    WEEK,
    /** The 1st at 00:00. */
    MONTH,
    /** 1 January 00:00. */
    YEAR
}
