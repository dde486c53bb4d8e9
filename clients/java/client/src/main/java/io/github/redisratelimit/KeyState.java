package io.github.redisratelimit;

import java.util.List;

/**
 * RL.INSPECT's reply, one record per kind of key. Times are milliseconds.
 * Every kind has {@code ttl} (ms until the key expires) and {@code memory}
 * (bytes, as MEMORY USAGE counts them; -1 where the Lua backend cannot ask).
 */
public sealed interface KeyState {
    /** The kind: throttle, slide, slice, lease or quota. */
    String type();

    /** Milliseconds until the key expires. */
    long ttl();

    /** Bytes, as MEMORY USAGE counts them. */
    long memory();

    /** While the key is blocked (BLOCK), the block's end in Unix ms; else null (and always for a lease). */
    Long blockedUntil();

    /**
     * A THROTTLE key.
     *
     * @param ttl        ms until the key expires
     * @param memory     bytes
     * @param tatAheadMs how far its theoretical arrival time is ahead of now
     * @param tatUnixMs  the theoretical arrival time, Unix ms
     * @param blockedUntil the block's end, Unix ms, or null
     */
    record ThrottleState(long ttl, long memory, long tatAheadMs, long tatUnixMs, Long blockedUntil)
            implements KeyState {
        @Override
        public String type() {
            return "throttle";
        }
    }

    /**
     * A SLIDE key.
     *
     * @param ttl         ms until the key expires
     * @param memory      bytes
     * @param units       units recorded in the window
     * @param entries     entries of the log
     * @param oldestAgeMs the oldest entry's age
     * @param newestAgeMs the newest entry's age
     * @param blockedUntil the block's end, Unix ms, or null
     */
    record SlideState(long ttl, long memory, long units, long entries, long oldestAgeMs, long newestAgeMs,
                      Long blockedUntil) implements KeyState {
        @Override
        public String type() {
            return "slide";
        }
    }

    /**
     * A SLICE key.
     *
     * @param ttl       ms until the key expires
     * @param memory    bytes
     * @param windowMs  its window
     * @param slices    its slice count
     * @param units     units counted
     * @param headAgeMs the age of the newest slice
     * @param counts    units per slice, newest first
     * @param blockedUntil the block's end, Unix ms, or null
     */
    record SliceState(long ttl, long memory, long windowMs, long slices, long units, long headAgeMs,
                      List<Long> counts, Long blockedUntil) implements KeyState {
        /** Copies {@code counts}. */
        public SliceState {
            counts = List.copyOf(counts);
        }

        @Override
        public String type() {
            return "slice";
        }
    }

    /**
     * One lease of a LEASE key.
     *
     * @param leaseId its id (as text; the bytes decoded as UTF-8)
     * @param weight  its weight
     * @param ttlMs   ms until it expires
     */
    record Holder(String leaseId, long weight, long ttlMs) {}

    /**
     * A LEASE key.
     *
     * @param ttl     ms until the key expires
     * @param memory  bytes
     * @param held    the weights held
     * @param leases  how many leases
     * @param holders the leases, soonest to expire first (at most 100)
     */
    record LeaseState(long ttl, long memory, long held, long leases, List<Holder> holders) implements KeyState {
        /** Copies {@code holders}. */
        public LeaseState {
            holders = List.copyOf(holders);
        }

        @Override
        public String type() {
            return "lease";
        }

        /** A lease is never blocked: null. */
        @Override
        public Long blockedUntil() {
            return null;
        }
    }

    /**
     * A QUOTA key.
     *
     * @param ttl    ms until the key expires
     * @param memory bytes
     * @param unit   its calendar unit
     * @param zone   its time zone
     * @param used   units used in the period
     * @param start  the period's start, Unix ms
     * @param end    the period's end, Unix ms
     * @param blockedUntil the block's end, Unix ms, or null
     */
    record QuotaState(long ttl, long memory, String unit, String zone, long used, long start, long end,
                      Long blockedUntil) implements KeyState {
        @Override
        public String type() {
            return "quota";
        }
    }
}
