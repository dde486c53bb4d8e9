package io.github.redisratelimit.gateway;

import io.github.redisratelimit.Entry;
import io.github.redisratelimit.Lease;
import io.github.redisratelimit.Limit;
import io.github.redisratelimit.RateLimitHeaders;
import io.github.redisratelimit.RateLimiter;
import io.github.redisratelimit.spring.Decisions;
import io.github.redisratelimit.spring.Policy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.springframework.cloud.gateway.filter.ratelimit.AbstractRateLimiter;
import org.springframework.cloud.gateway.support.ConfigurationService;
import org.springframework.http.HttpStatus;
import org.springframework.web.server.ResponseStatusException;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Mono;

/**
 * A RateLimiter for Spring Cloud Gateway's RequestRateLimiter filter that
 * decides redis-ratelimit's limits: any kind and period, several at once in
 * one RL.ALLOW, leases (released when the exchange ends, by
 * {@link LeaseReleaseFilter}). Refused: the gateway's 429 with our header
 * fields, Retry-After included. A route's limits come from the filter's
 * args ({@code redis-ratelimit.limits: SLIDE 100 60; LEASE 5 30},
 * {@code redis-ratelimit.names: per-minute, in-flight}), or the default
 * config of this bean. A spec may end in {@code BLOCK b} (a refusal blocks
 * the key: 429 with Retry-After until the block ends) and {@code SHADOW}
 * (decided beside the others, never refusing, its header fields not sent;
 * when every limit is shadow, each is decided alone in one pipeline).
 */
public class RedisRateLimitGatewayLimiter extends AbstractRateLimiter<RedisRateLimitGatewayLimiter.Config> {
    /** The bean's name, for {@code rate-limiter: "#{@redisRateLimitGatewayLimiter}"}. */
    public static final String BEAN = "redisRateLimitGatewayLimiter";
    /** The prefix of the filter's args. */
    public static final String CONFIGURATION_PROPERTY_NAME = "redis-ratelimit";

    /** A route's limits. */
    public static class Config {
        private String limits = "";
        private String names = "";
        private String keyPrefix = "rl:gw:";
        private long quantity = 1;
        private Duration timeout = Duration.ofMillis(250);
        private boolean failOpen = false;

        /** @return the limits, as the module's specs separated by ';' */
        public String getLimits() {
            return limits;
        }

        /**
         * @param limits the limits, as the module's specs separated by ';'
         * @return this
         */
        public Config setLimits(String limits) {
            this.limits = limits;
            return this;
        }

        /** @return the names, separated by ',' (default: the route id and the index) */
        public String getNames() {
            return names;
        }

        /**
         * @param names the names, separated by ','
         * @return this
         */
        public Config setNames(String names) {
            this.names = names;
            return this;
        }

        /** @return the keys' prefix, before the route id and the resolved key */
        public String getKeyPrefix() {
            return keyPrefix;
        }

        /**
         * @param keyPrefix the keys' prefix
         * @return this
         */
        public Config setKeyPrefix(String keyPrefix) {
            this.keyPrefix = keyPrefix;
            return this;
        }

        /** @return what a request costs */
        public long getQuantity() {
            return quantity;
        }

        /**
         * @param quantity what a request costs
         * @return this
         */
        public Config setQuantity(long quantity) {
            this.quantity = quantity;
            return this;
        }

        /** @return the longest a decision may take */
        public Duration getTimeout() {
            return timeout;
        }

        /**
         * @param timeout the longest a decision may take
         * @return this
         */
        public Config setTimeout(Duration timeout) {
            this.timeout = timeout;
            return this;
        }

        /** @return whether an outage lets requests through */
        public boolean isFailOpen() {
            return failOpen;
        }

        /**
         * @param failOpen whether an outage lets requests through (else 503)
         * @return this
         */
        public Config setFailOpen(boolean failOpen) {
            this.failOpen = failOpen;
            return this;
        }
    }

    private final RateLimiter limiter;
    private final Config defaults;

    /**
     * @param limiter       the limiter
     * @param configuration the gateway's configuration service
     * @param defaults      the limits of a route that names none
     */
    public RedisRateLimitGatewayLimiter(RateLimiter limiter, ConfigurationService configuration, Config defaults) {
        super(Config.class, CONFIGURATION_PROPERTY_NAME, configuration);
        this.limiter = limiter;
        this.defaults = defaults;
    }

    @Override
    public Mono<Response> isAllowed(String routeId, String id) {
        Config c = getConfig().getOrDefault(routeId, defaults);
        List<Entry> entries = new ArrayList<>();
        List<RateLimitHeaders.Named> named = new ArrayList<>();
        String[] names = c.getNames().isBlank() ? new String[0] : c.getNames().split("\\s*,\\s*");
        int i = 0;
        boolean leases = false;
        for (String spec : c.getLimits().split(";")) {
            if (spec.isBlank()) {
                continue;
            }
            Limit limit = Policy.parseLimit(spec);
            String name = i < names.length ? names[i] : routeId + "-" + (i + 1);
            String key = c.getKeyPrefix() + "{" + routeId + ":" + id + "}:" + (i + 1);
            entries.add(Entry.of(key, limit));
            named.add(new RateLimitHeaders.Named(name, limit));
            leases |= limit instanceof Lease;
            i++;
        }
        if (entries.isEmpty()) {
            return Mono.just(new Response(true, Map.of()));
        }
        String leaseId = leases ? RateLimiter.newLeaseId() : null;
        return Mono.deferContextual(ctx -> {
            ServerWebExchange exchange = ctx.getOrDefault(LeaseReleaseFilter.EXCHANGE, null);
            return Mono.fromCompletionStage(() -> Decisions.decide(limiter, entries, c.getQuantity(), leaseId))
                    .timeout(c.getTimeout())
                    .map(d -> {
                        if (leaseId != null && !d.limited() && exchange != null) {
                            LeaseReleaseFilter.hold(exchange, entries, leaseId);
                        }
                        return new Response(!d.limited(), Decisions.headers(named, d));
                    })
                    .onErrorResume(e -> {
                        if (leaseId != null) {
                            LeaseReleaseFilter.release(limiter, entries, leaseId);
                        }
                        if (c.isFailOpen()) {
                            return Mono.just(new Response(true, Map.of()));
                        }
                        return Mono.error(new ResponseStatusException(HttpStatus.SERVICE_UNAVAILABLE,
                                "rate limiter unavailable", e));
                    });
        });
    }

}
