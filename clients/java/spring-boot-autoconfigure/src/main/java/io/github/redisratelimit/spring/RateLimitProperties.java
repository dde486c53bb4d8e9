package io.github.redisratelimit.spring;

import io.github.redisratelimit.RateLimiter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code ratelimit.*} properties (docs/middleware.md names each option).
 * <pre>
 * ratelimit:
 *   rules:
 *     - name: per-ip
 *       key: rl:{ip:$ip}
 *       limit: THROTTLE 99 100 60
 *   routes:
 *     - path: /login
 *       methods: [POST]
 *       rules:
 *         - { name: login, key: "rl:{login:$ip}", limit: SLIDE 5 300, block: 15m }
 *         - { name: login-new, key: "rl:{login2:$ip}", limit: SLIDE 3 300, shadow: true }
 * </pre>
 */
@ConfigurationProperties(prefix = "ratelimit")
public class RateLimitProperties {
    /** Whether the limiter is configured at all. */
    private boolean enabled = true;
    /** Which backend answers: AUTO (the module when loaded, else the Lua scripts), MODULE or LUA. */
    private RateLimiter.BackendChoice backend = RateLimiter.BackendChoice.AUTO;
    /** The module's command prefix, skipping its detection (the word of its PREFIX load option). */
    private String prefix;
    /** A prefix put before every key of @RateLimit (the filter's keys are written in full). */
    private String keyPrefix = "rl:";
    /** The filter's rules (1 to 16 with the routes' rules): each a name, a key template and a limit, optionally a block (after a refusal, the key refuses for that long) and shadow (decided and counted, never refusing). */
    private List<Rule> rules = new ArrayList<>();
    /** Rules for chosen routes, decided in the same RL.ALLOW as the policy's rules. */
    private List<Route> routes = new ArrayList<>();
    /** The servlet filter and the WebFlux WebFilter. */
    private final Filter filter = new Filter();

    /** One rule: a name, a key template and a limit. */
    public static class Rule {
        /** The policy name in the header fields (printable ASCII). */
        private String name;
        /** The key template: $client, $ip, $path and $method are replaced (rl:{user:$client}:s). */
        private String key;
        /** The limit as the module's spec: THROTTLE 4 10 60, SLIDE 10 60, SLICE 10 60 6, LEASE 5 30, QUOTA 1000 DAY TZ Europe/Berlin; MS at the end for milliseconds. */
        private String limit;
        /** BLOCK: after a refusal, the rule's key refuses every request for this long (whole seconds, or milliseconds with MS); not on a LEASE. */
        private Duration block;
        /** A shadow rule: decided and counted (shadow_limited) beside the others, never refusing a request, its header fields not sent. */
        private boolean shadow;

        /** @return the name */
        public String getName() {
            return name;
        }

        /** @param name the name */
        public void setName(String name) {
            this.name = name;
        }

        /** @return the key template */
        public String getKey() {
            return key;
        }

        /** @param key the key template */
        public void setKey(String key) {
            this.key = key;
        }

        /** @return the limit's spec */
        public String getLimit() {
            return limit;
        }

        /** @param limit the limit's spec */
        public void setLimit(String limit) {
            this.limit = limit;
        }

        /** @return the block after a refusal, or null for none */
        public Duration getBlock() {
            return block;
        }

        /** @param block the block after a refusal */
        public void setBlock(Duration block) {
            this.block = block;
        }

        /** @return whether the rule is a shadow rule */
        public boolean isShadow() {
            return shadow;
        }

        /** @param shadow whether the rule is a shadow rule */
        public void setShadow(boolean shadow) {
            this.shadow = shadow;
        }
    }

    /** Rules for the requests of a path. */
    public static class Route {
        /** An exact path (/login) or a prefix ending in * (/api/*). */
        private String path;
        /** The methods, upper-case (default: every method). */
        private List<String> methods = new ArrayList<>();
        /** The route's rules. */
        private List<Rule> rules = new ArrayList<>();

        /** @return the path */
        public String getPath() {
            return path;
        }

        /** @param path the path */
        public void setPath(String path) {
            this.path = path;
        }

        /** @return the methods */
        public List<String> getMethods() {
            return methods;
        }

        /** @param methods the methods */
        public void setMethods(List<String> methods) {
            this.methods = methods;
        }

        /** @return the rules */
        public List<Rule> getRules() {
            return rules;
        }

        /** @param rules the rules */
        public void setRules(List<Rule> rules) {
            this.rules = rules;
        }
    }

    /** The middleware's options (docs/middleware.md). */
    public static class Filter {
        /** Whether the filter applies the policy to every request (it passes every request while the policy has no rule). */
        private boolean enabled = true;
        /** Let requests through unlimited when the limiter cannot decide; false answers 503 (outage) or 500 (configuration error). */
        private boolean failOpen = false;
        /** The longest a decision may take, counted from the request's arrival. */
        private Duration timeout = Duration.ofMillis(250);
        /** Give the units back (RL.REFUND) when the response's status is 500-599. */
        private boolean refund5xx = false;
        /** What a request costs, of every rule. */
        private long quantity = 1;
        /** Peers whose forwarding header is believed: addresses and CIDR ranges, or * for every peer. */
        private List<String> trustedProxies = new ArrayList<>();
        /** Which forwarding header a trusted peer's is: X-Forwarded-For or Forwarded. */
        private String proxyHeader = "X-Forwarded-For";
        /** A header naming the client ($client), believed only from a trusted peer. */
        private String clientHeader;
        /** The filter's order among the servlet filters. */
        private int order = -100;

        /** @return whether enabled */
        public boolean isEnabled() {
            return enabled;
        }

        /** @param enabled whether enabled */
        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        /** @return whether it fails open */
        public boolean isFailOpen() {
            return failOpen;
        }

        /** @param failOpen whether it fails open */
        public void setFailOpen(boolean failOpen) {
            this.failOpen = failOpen;
        }

        /** @return the timeout */
        public Duration getTimeout() {
            return timeout;
        }

        /** @param timeout the timeout */
        public void setTimeout(Duration timeout) {
            this.timeout = timeout;
        }

        /** @return whether 5xx gives units back */
        public boolean isRefund5xx() {
            return refund5xx;
        }

        /** @param refund5xx whether 5xx gives units back */
        public void setRefund5xx(boolean refund5xx) {
            this.refund5xx = refund5xx;
        }

        /** @return the quantity */
        public long getQuantity() {
            return quantity;
        }

        /** @param quantity the quantity */
        public void setQuantity(long quantity) {
            this.quantity = quantity;
        }

        /** @return the trusted proxies */
        public List<String> getTrustedProxies() {
            return trustedProxies;
        }

        /** @param trustedProxies the trusted proxies */
        public void setTrustedProxies(List<String> trustedProxies) {
            this.trustedProxies = trustedProxies;
        }

        /** @return the proxy header */
        public String getProxyHeader() {
            return proxyHeader;
        }

        /** @param proxyHeader the proxy header */
        public void setProxyHeader(String proxyHeader) {
            this.proxyHeader = proxyHeader;
        }

        /** @return the client header */
        public String getClientHeader() {
            return clientHeader;
        }

        /** @param clientHeader the client header */
        public void setClientHeader(String clientHeader) {
            this.clientHeader = clientHeader;
        }

        /** @return the order */
        public int getOrder() {
            return order;
        }

        /** @param order the order */
        public void setOrder(int order) {
            this.order = order;
        }
    }

    /** @return whether enabled */
    public boolean isEnabled() {
        return enabled;
    }

    /** @param enabled whether enabled */
    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }

    /** @return the backend */
    public RateLimiter.BackendChoice getBackend() {
        return backend;
    }

    /** @param backend the backend */
    public void setBackend(RateLimiter.BackendChoice backend) {
        this.backend = backend;
    }

    /** @return the prefix */
    public String getPrefix() {
        return prefix;
    }

    /** @param prefix the prefix */
    public void setPrefix(String prefix) {
        this.prefix = prefix;
    }

    /** @return the key prefix */
    public String getKeyPrefix() {
        return keyPrefix;
    }

    /** @param keyPrefix the key prefix */
    public void setKeyPrefix(String keyPrefix) {
        this.keyPrefix = keyPrefix;
    }

    /** @return the rules */
    public List<Rule> getRules() {
        return rules;
    }

    /** @param rules the rules */
    public void setRules(List<Rule> rules) {
        this.rules = rules;
    }

    /** @return the routes */
    public List<Route> getRoutes() {
        return routes;
    }

    /** @param routes the routes */
    public void setRoutes(List<Route> routes) {
        this.routes = routes;
    }

    /** @return the filter's options */
    public Filter getFilter() {
        return filter;
    }
}
