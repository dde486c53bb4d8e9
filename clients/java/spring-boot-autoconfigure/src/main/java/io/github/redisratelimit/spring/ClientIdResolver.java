package io.github.redisratelimit.spring;

/** The application's $client of a request (an authenticated user id): declare a bean of this type. */
@FunctionalInterface
public interface ClientIdResolver {
    /**
     * @param request the request
     * @return its client id, or null or empty for none (then the client header of a trusted peer, else $ip)
     */
    String clientId(RateLimitRequest request);
}
