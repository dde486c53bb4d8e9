package io.github.redisratelimit.spring;

import java.util.List;
import java.util.function.Function;

/**
 * A request as the filter sees it, whichever the stack (servlet or WebFlux).
 *
 * @param method   the method, as sent
 * @param path     the path without the query, not decoded
 * @param peer     the TCP peer's address
 * @param headers  a header's field lines by name (null or empty when absent)
 * @param request  the framework's request (HttpServletRequest or ServerHttpRequest)
 */
public record RateLimitRequest(String method, String path, String peer, Function<String, List<String>> headers,
                               Object request) {}
