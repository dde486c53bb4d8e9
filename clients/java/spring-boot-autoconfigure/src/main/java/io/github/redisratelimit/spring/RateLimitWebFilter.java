package io.github.redisratelimit.spring;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.springframework.core.Ordered;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.server.reactive.ServerHttpRequest;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;

/**
 * The policy on every request of a WebFlux application: the same decision
 * as the servlet filter ({@link RequestLimiter}), never blocking; the
 * leases released when the exchange ends (completed, failed or cancelled).
 */
public class RateLimitWebFilter implements WebFilter, Ordered {
    private final RequestLimiter limiter;
    private final int order;

    /**
     * @param limiter the decision
     * @param order   the filter's order
     */
    public RateLimitWebFilter(RequestLimiter limiter, int order) {
        this.limiter = limiter;
        this.order = order;
    }

    @Override
    public int getOrder() {
        return order;
    }

    static RateLimitRequest request(ServerHttpRequest r) {
        InetSocketAddress remote = r.getRemoteAddress();
        String peer = remote == null ? "" : remote.getAddress() != null ? remote.getAddress().getHostAddress()
                : remote.getHostString();
        HttpHeaders h = r.getHeaders();
        return new RateLimitRequest(r.getMethod().name(), r.getPath().value(), peer, name -> values(h, name), r);
    }

    @Override
    public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
        long arrival = System.nanoTime();
        return Mono.fromCompletionStage(() -> limiter.decide(request(exchange.getRequest()), arrival))
                .flatMap(outcome -> {
                    ServerHttpResponse response = exchange.getResponse();
                    if (outcome instanceof RequestLimiter.Answer a) {
                        response.setStatusCode(HttpStatus.valueOf(a.status()));
                        a.headers().forEach(response.getHeaders()::set);
                        response.getHeaders().setContentType(new MediaType("text", "plain", StandardCharsets.UTF_8));
                        DataBuffer body = response.bufferFactory().wrap(a.body().getBytes(StandardCharsets.UTF_8));
                        return response.writeWith(Mono.just(body));
                    }
                    if (!(outcome instanceof RequestLimiter.Allowed allowed)) {
                        return chain.filter(exchange);
                    }
                    response.beforeCommit(() -> {
                        allowed.headers().forEach((name, value) -> {
                            if (response.getHeaders().getFirst(name) == null) {
                                response.getHeaders().set(name, value);
                            }
                        });
                        return Mono.empty();
                    });
                    return chain.filter(exchange)
                            .doOnError(e -> limiter.finish(allowed, 500))
                            .doOnSuccess(v -> limiter.finish(allowed, status(response)))
                            .doOnCancel(() -> limiter.finish(allowed, 499));
                });
    }

    /**
     * A header's values, through the methods HttpHeaders has with the same
     * signature in Framework 6 and 7 (Framework 7's HttpHeaders is no longer
     * a Map: get(Object) and containsKey(Object) are gone), so that one jar
     * runs on Boot 3 and 4.
     */
    static List<String> values(HttpHeaders h, String name) {
        List<String> out = new ArrayList<>();
        for (Map.Entry<String, List<String>> e : h.headerSet()) {
            if (e.getKey().equalsIgnoreCase(name)) {
                out.addAll(e.getValue());
            }
        }
        return out;
    }

    private static int status(ServerHttpResponse response) {
        return response.getStatusCode() == null ? 200 : response.getStatusCode().value();
    }
}
