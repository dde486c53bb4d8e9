package io.github.redisratelimit.gateway;

import io.github.redisratelimit.Entry;
import io.github.redisratelimit.Lease;
import io.github.redisratelimit.RateLimiter;
import java.util.List;
import org.springframework.cloud.gateway.filter.GatewayFilterChain;
import org.springframework.cloud.gateway.filter.GlobalFilter;
import org.springframework.core.Ordered;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Mono;

/**
 * Puts the exchange where {@link RedisRateLimitGatewayLimiter} finds it (the
 * Reactor context) and releases the exchange's leases once it ends
 * (completed, failed or cancelled).
 */
public class LeaseReleaseFilter implements GlobalFilter, Ordered {
    static final String EXCHANGE = LeaseReleaseFilter.class.getName() + ".exchange";
    private static final String HELD = LeaseReleaseFilter.class.getName() + ".held";

    private record Held(List<Entry> entries, String leaseId) {}

    private final RateLimiter limiter;

    /** @param limiter the limiter */
    public LeaseReleaseFilter(RateLimiter limiter) {
        this.limiter = limiter;
    }

    static void hold(ServerWebExchange exchange, List<Entry> entries, String leaseId) {
        exchange.getAttributes().put(HELD, new Held(entries, leaseId));
    }

    static void release(RateLimiter limiter, List<Entry> entries, String leaseId) {
        for (Entry e : entries) {
            if (e.limit() instanceof Lease) {
                limiter.releaseAsync(e.key(), leaseId);
            }
        }
    }

    @Override
    public Mono<Void> filter(ServerWebExchange exchange, GatewayFilterChain chain) {
        return chain.filter(exchange)
                .doFinally(signal -> {
                    Object h = exchange.getAttributes().remove(HELD);
                    if (h instanceof Held held) {
                        release(limiter, held.entries(), held.leaseId());
                    }
                })
                .contextWrite(ctx -> ctx.put(EXCHANGE, exchange));
    }

    @Override
    public int getOrder() {
        return Ordered.HIGHEST_PRECEDENCE;
    }
}
