package io.github.redisratelimit;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A result as the HTTP header fields the other packages give: RateLimit-Policy
 * and RateLimit (draft-ietf-httpapi-ratelimit-headers), the X-RateLimit-*
 * trio, and Retry-After on a refusal that can fit. Times in seconds.
 */
public final class RateLimitHeaders {
    private RateLimitHeaders() {}

    /**
     * A limit with its policy name (the quoted name in RateLimit-Policy and RateLimit).
     *
     * @param name  printable ASCII
     * @param limit the limit
     */
    public record Named(String name, Limit limit) {}

    /**
     * The fields for one limit named "default".
     *
     * @param result its result
     * @param limit  the limit
     * @return the header fields, in order
     */
    public static Map<String, String> of(Result result, Limit limit) {
        return of(result, new Named("default", limit));
    }

    /**
     * The fields for one named limit.
     *
     * @param result its result
     * @param named  the limit and its name
     * @return the header fields, in order
     */
    public static Map<String, String> of(Result result, Named named) {
        return fields(result.limited(), result.limit(), result.remaining(), result.retryAfter(),
                result.resetAfter(), List.of(item(named, result)), named);
    }

    /**
     * The fields for RL.ALLOW's result and its limits, in the same order.
     *
     * @param result the result
     * @param limits the limits, as given to allow
     * @return the header fields, in order
     */
    public static Map<String, String> of(AllowResult result, List<Named> limits) {
        if (result.results().size() != limits.size()) {
            throw new IllegalArgumentException(result.results().size() + " results for " + limits.size() + " limits");
        }
        List<String> items = new java.util.ArrayList<>(limits.size());
        for (int i = 0; i < limits.size(); i++) {
            items.add(item(limits.get(i), result.results().get(i)));
        }
        return fields(result.limited(), result.limit(), result.remaining(), result.retryAfter(),
                result.resetAfter(), items, limits.get(result.index() - 1));
    }

    private static Map<String, String> fields(boolean limited, long limit, long remaining, long retry, long reset,
                                              List<String> items, Named binding) {
        boolean ms = binding.limit().ms();
        long retryAfter = Units.replySeconds(retry, ms);
        long resetAfter = Units.replySeconds(reset, ms);
        long t = limited && retryAfter >= 0 ? retryAfter : resetAfter;
        Map<String, String> h = new LinkedHashMap<>();
        h.put("RateLimit-Policy", String.join(", ", items));
        h.put("RateLimit", sfString(binding.name()) + ";r=" + remaining + ";t=" + t);
        h.put("X-RateLimit-Limit", Long.toString(limit));
        h.put("X-RateLimit-Remaining", Long.toString(remaining));
        h.put("X-RateLimit-Reset", Long.toString(resetAfter));
        if (limited && retryAfter >= 0) {
            h.put("Retry-After", Long.toString(retryAfter));
        }
        return h;
    }

    private static String item(Named named, Result result) {
        String name = sfString(named.name());
        if (named.limit() instanceof Lease) {
            return name + ";q=" + result.limit() + ";qu=\"concurrent-requests\"";
        }
        long w = named.limit().windowSeconds();
        return w < 0 ? name + ";q=" + result.limit() : name + ";q=" + result.limit() + ";w=" + w;
    }

    /** A Structured Field String (RFC 9651): quoted, with \ and " escaped. */
    static String sfString(String value) {
        StringBuilder b = new StringBuilder(value.length() + 2).append('"');
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (c < 0x20 || c > 0x7e) {
                throw new IllegalArgumentException("not a printable ASCII policy name: " + value);
            }
            if (c == '\\' || c == '"') {
                b.append('\\');
            }
            b.append(c);
        }
        return b.append('"').toString();
    }
}
