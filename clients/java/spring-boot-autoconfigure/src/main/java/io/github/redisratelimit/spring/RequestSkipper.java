package io.github.redisratelimit.spring;

/** Requests the filter lets through untouched (no command, no header field): declare a bean of this type. */
@FunctionalInterface
public interface RequestSkipper {
    /**
     * @param request the request
     * @return true to let it through untouched (/health, static files)
     */
    boolean skip(RateLimitRequest request);
}
