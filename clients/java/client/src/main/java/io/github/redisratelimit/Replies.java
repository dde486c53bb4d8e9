package io.github.redisratelimit;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** The replies as typed values, and the server's error replies as this package's exceptions. */
final class Replies {
    private Replies() {}

    static long integer(Object value) {
        if (value instanceof Long l) {
            return l;
        }
        if (value instanceof Number n) {
            return n.longValue();
        }
        if (value instanceof byte[] b) {
            return Long.parseLong(new String(b, StandardCharsets.US_ASCII));
        }
        if (value instanceof String s) {
            return Long.parseLong(s);
        }
        throw new RateLimitException("expected an integer in the reply, got " + describe(value));
    }

    static String text(Object value) {
        if (value instanceof byte[] b) {
            return new String(b, StandardCharsets.UTF_8);
        }
        return String.valueOf(value);
    }

    static List<?> array(Object value, String what) {
        if (value instanceof List<?> list) {
            return list;
        }
        throw new RateLimitException("expected " + what + ", got " + describe(value));
    }

    static Result result(Object reply) {
        List<?> r = array(reply, "the five fields of a limiter reply");
        if (r.size() < 5) {
            throw new RateLimitException("expected the five fields of a limiter reply, got " + r.size());
        }
        return new Result(integer(r.get(0)) == 1, integer(r.get(1)), integer(r.get(2)),
                integer(r.get(3)), integer(r.get(4)));
    }

    static AllowResult allowResult(Object reply) {
        List<?> r = array(reply, "RL.ALLOW's seven elements");
        if (r.size() != 7) {
            throw new RateLimitException("expected RL.ALLOW's seven elements, got " + r.size());
        }
        List<Result> each = new ArrayList<>();
        for (Object o : array(r.get(6), "each limit's fields")) {
            each.add(result(o));
        }
        int index = (int) integer(r.get(5));
        if (index < 1 || index > each.size()) {
            throw new RateLimitException("binding index " + index + " out of range 1.." + each.size());
        }
        return new AllowResult(integer(r.get(0)) == 1, integer(r.get(1)), integer(r.get(2)),
                integer(r.get(3)), integer(r.get(4)), index, each);
    }

    /** RL.TOP's reply: {@code [key, refusals, last_refusal_ms]} each. */
    static List<TopKey> top(Object reply) {
        List<TopKey> out = new ArrayList<>();
        for (Object o : array(reply, "RL.TOP's entries")) {
            List<?> e = array(o, "an RL.TOP entry");
            if (e.size() != 3) {
                throw new RateLimitException("expected an RL.TOP entry of 3 elements, got " + e.size());
            }
            out.add(new TopKey(text(e.get(0)), integer(e.get(1)), integer(e.get(2))));
        }
        return List.copyOf(out);
    }

    static boolean released(Object reply) {
        return integer(reply) == 1;
    }

    /** RL.INSPECT's pairs (a flat array under RESP2, a map under RESP3), or null. */
    static KeyState keyState(Object reply) {
        if (reply == null) {
            return null;
        }
        java.util.HashMap<String, Object> f = new java.util.HashMap<>();
        if (reply instanceof Map<?, ?> map) {
            map.forEach((k, v) -> f.put(text(k), v));
        } else {
            List<?> pairs = array(reply, "RL.INSPECT's field-value pairs");
            for (int i = 0; i + 1 < pairs.size(); i += 2) {
                f.put(text(pairs.get(i)), pairs.get(i + 1));
            }
        }
        String type = text(f.get("type"));
        long ttl = num(f, "ttl");
        long memory = num(f, "memory");
        Long blocked = f.get("blocked_until") == null ? null : integer(f.get("blocked_until"));
        switch (type) {
            case "throttle":
                return new KeyState.ThrottleState(ttl, memory, num(f, "tat_ahead_ms"), num(f, "tat_unix_ms"),
                        blocked);
            case "slide":
                return new KeyState.SlideState(ttl, memory, num(f, "units"), num(f, "entries"),
                        num(f, "oldest_age_ms"), num(f, "newest_age_ms"), blocked);
            case "slice": {
                List<Long> counts = new ArrayList<>();
                Object c = f.get("counts");
                if (c != null) {
                    for (Object o : array(c, "counts")) {
                        counts.add(integer(o));
                    }
                }
                return new KeyState.SliceState(ttl, memory, num(f, "window_ms"), num(f, "slices"),
                        num(f, "units"), num(f, "head_age_ms"), counts, blocked);
            }
            case "lease": {
                List<KeyState.Holder> holders = new ArrayList<>();
                Object h = f.get("holders");
                if (h != null) {
                    for (Object o : array(h, "holders")) {
                        List<?> one = array(o, "a holder");
                        holders.add(new KeyState.Holder(text(one.get(0)), integer(one.get(1)), integer(one.get(2))));
                    }
                }
                return new KeyState.LeaseState(ttl, memory, num(f, "held"), num(f, "leases"), holders);
            }
            case "quota":
                return new KeyState.QuotaState(ttl, memory, text(f.get("unit")), text(f.get("zone")),
                        num(f, "used"), num(f, "start"), num(f, "end"), blocked);
            default:
                throw new RateLimitException("RL.INSPECT answered an unknown type: " + type);
        }
    }

    private static long num(Map<String, Object> fields, String name) {
        Object v = fields.get(name);
        return v == null ? 0 : integer(v);
    }

    private static String describe(Object value) {
        return value == null ? "nil" : value.getClass().getSimpleName();
    }

    /** The server's error text of a failure, or null when it is not an error reply. */
    static String errorText(Throwable t) {
        for (Throwable c = Futures.unwrap(t); c != null; c = c.getCause()) {
            String name = c.getClass().getName();
            String m = c.getMessage();
            if (m != null && (name.startsWith("io.lettuce") || name.startsWith("redis.clients")
                    || name.startsWith("org.redisson") || c instanceof ServerError)) {
                if (m.startsWith("ERR") || m.startsWith("WRONGTYPE") || m.startsWith("NOSCRIPT")
                        || m.startsWith("NOPERM") || m.startsWith("CROSSSLOT")) {
                    return m;
                }
            }
            if (c.getCause() == c) {
                break;
            }
        }
        return null;
    }

    /** This package's exception for a failure: ERR as ArgumentException, WRONGTYPE as WrongTypeException. */
    static RuntimeException translate(Throwable t) {
        Throwable u = Futures.unwrap(t);
        if (u instanceof RateLimitException r) {
            return r;
        }
        String text = errorText(u);
        if (text != null && text.startsWith("WRONGTYPE")) {
            return new WrongTypeException(text, u);
        }
        if (text != null && text.startsWith("ERR ")) {
            return new ArgumentException(text.substring(4), u);
        }
        if (u instanceof RuntimeException r) {
            return r;
        }
        return new RateLimitException(String.valueOf(u.getMessage()), u);
    }
}
