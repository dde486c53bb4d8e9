package io.github.redisratelimit.spring;

import io.github.redisratelimit.AllowResult;
import io.github.redisratelimit.RateLimitException;
import io.github.redisratelimit.RateLimitHeaders;
import java.util.Map;

/** A call that a {@link RateLimit} refused; the starter's handler turns it into 429 with its header fields. */
public class RateLimitedException extends RateLimitException {
    private static final long serialVersionUID = 1L;
    private final transient AllowResult result;
    private final Map<String, String> headers;

    /**
     * @param result  the decision
     * @param headers its header fields
     */
    public RateLimitedException(AllowResult result, Map<String, String> headers) {
        super("rate limited: " + (headers.containsKey("Retry-After") ? "retry in " + headers.get("Retry-After") + " s"
                : "this request exceeds the capacity"));
        this.result = result;
        this.headers = Map.copyOf(headers);
    }

    /** @return the decision */
    public AllowResult result() {
        return result;
    }

    /** @return the header fields ({@link RateLimitHeaders}) */
    public Map<String, String> headers() {
        return headers;
    }

    /** @return Retry-After in seconds, or -1 when the call can never fit */
    public long retryAfterSeconds() {
        String r = headers.get("Retry-After");
        return r == null ? -1 : Long.parseLong(r);
    }
}
