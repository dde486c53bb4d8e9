package io.github.redisratelimit.spring;

import io.github.redisratelimit.Lease;
import io.github.redisratelimit.Limit;
import io.github.redisratelimit.QuotaUnit;
import io.github.redisratelimit.Quota;
import io.github.redisratelimit.Slice;
import io.github.redisratelimit.Slide;
import io.github.redisratelimit.Throttle;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The filter's policy: rules (a name, a key template, a limit) and route
 * rules, decided together in one RL.ALLOW. Immutable; checked when made
 * (names distinct, at most 16 rules together, every $name known).
 *
 * @param rules  the rules of every request
 * @param routes the rules of chosen routes
 */
public record Policy(List<Rule> rules, List<Route> routes) {
    private static final Pattern VARIABLE = Pattern.compile("\\$([A-Za-z_]+)");
    private static final Set<String> VARIABLES = Set.of("client", "ip", "path", "method");

    /**
     * A rule.
     *
     * @param name  the policy name in the header fields
     * @param key   the key template
     * @param limit the limit
     */
    public record Rule(String name, String key, Limit limit) {}

    /**
     * Rules for a path.
     *
     * @param path    exact, or a prefix ending in *
     * @param methods the methods (empty: every method)
     * @param rules   the rules
     */
    public record Route(String path, List<String> methods, List<Rule> rules) {
        /** Copies the lists. */
        public Route {
            methods = List.copyOf(methods);
            rules = List.copyOf(rules);
        }

        boolean matches(String method, String requestPath) {
            if (!methods.isEmpty() && !methods.contains(method)) {
                return false;
            }
            if (path.endsWith("*")) {
                return requestPath.startsWith(path.substring(0, path.length() - 1));
            }
            return path.equals(requestPath);
        }
    }

    /** Checks the policy. */
    public Policy {
        rules = List.copyOf(rules);
        routes = List.copyOf(routes);
        Set<String> names = new HashSet<>();
        int count = 0;
        List<Rule> all = new ArrayList<>(rules);
        routes.forEach(r -> all.addAll(r.rules()));
        for (Rule r : all) {
            count++;
            if (!names.add(r.name())) {
                throw new IllegalArgumentException("rule name '" + r.name() + "' is given more than once");
            }
            Matcher m = VARIABLE.matcher(r.key());
            while (m.find()) {
                if (!VARIABLES.contains(m.group(1))) {
                    throw new IllegalArgumentException("rule '" + r.name() + "': unknown $" + m.group(1)
                            + " in key '" + r.key() + "' (known: $client, $ip, $path, $method)");
                }
            }
        }
        if (count > 16) {
            throw new IllegalArgumentException(count + " rules: at most 16 together (RL.ALLOW's numkeys)");
        }
    }

    /** The empty policy: every request passes. */
    public static Policy none() {
        return new Policy(List.of(), List.of());
    }

    /**
     * A policy of rules alone.
     *
     * @param rules the rules
     * @return the policy
     */
    public static Policy of(Rule... rules) {
        return new Policy(List.of(rules), List.of());
    }

    /** Whether no rule applies anywhere. */
    public boolean isEmpty() {
        return rules.isEmpty() && routes.stream().allMatch(r -> r.rules().isEmpty());
    }

    /** The rules that apply to a request: the policy's, then every matching route's. */
    List<Rule> rulesFor(String method, String path) {
        if (routes.isEmpty()) {
            return rules;
        }
        List<Rule> out = new ArrayList<>(rules);
        for (Route r : routes) {
            if (r.matches(method, path)) {
                out.addAll(r.rules());
            }
        }
        return out;
    }

    /**
     * A limit from the module's spec words: {@code THROTTLE 4 10 60},
     * {@code SLIDE 10 60 [PRECISION d]}, {@code SLICE 10 60 6},
     * {@code LEASE 5 30}, {@code QUOTA 1000 DAY [TZ zone]}; {@code MS}
     * anywhere after the kind makes its times milliseconds; {@code BLOCK b}
     * and {@code SHADOW} after the numbers are the spec's options. The
     * numbers' ranges are the module's to check (at the first request).
     *
     * @param spec the words
     * @return the limit
     */
    public static Limit parseLimit(String spec) {
        List<String> w = new ArrayList<>(List.of(spec.trim().split("\\s+")));
        boolean ms = w.removeIf(s -> s.equalsIgnoreCase("MS"));
        boolean shadow = w.removeIf(s -> s.equalsIgnoreCase("SHADOW"));
        Long block = null;
        for (int i = 1; i + 1 < w.size(); i++) {
            if (w.get(i).equalsIgnoreCase("BLOCK")) {
                try {
                    block = Long.parseLong(w.get(i + 1));
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("limit '" + spec + "': BLOCK needs a number", e);
                }
                w.remove(i + 1);
                w.remove(i);
                break;
            }
        }
        Limit limit = parseBase(spec, w, ms);
        if (block != null) {
            limit = limit.withBlock(block);
        }
        return shadow ? limit.asShadow() : limit;
    }

    private static Limit parseBase(String spec, List<String> w, boolean ms) {
        String kind = w.isEmpty() ? "" : w.get(0).toUpperCase(Locale.ROOT);
        try {
            switch (kind) {
                case "THROTTLE":
                    need(spec, w, 4);
                    return new Throttle(n(w, 1), n(w, 2), n(w, 3), ms);
                case "SLIDE": {
                    Long precision = null;
                    if (w.size() == 5 && w.get(3).equalsIgnoreCase("PRECISION")) {
                        precision = n(w, 4);
                    } else {
                        need(spec, w, 3);
                    }
                    return new Slide(n(w, 1), n(w, 2), precision, ms);
                }
                case "SLICE":
                    need(spec, w, 4);
                    return new Slice(n(w, 1), n(w, 2), n(w, 3), ms);
                case "LEASE":
                    need(spec, w, 3);
                    return new Lease(n(w, 1), n(w, 2), ms);
                case "QUOTA": {
                    String tz = null;
                    if (w.size() == 5 && w.get(3).equalsIgnoreCase("TZ")) {
                        tz = w.get(4);
                    } else {
                        need(spec, w, 3);
                    }
                    return new Quota(n(w, 1), QuotaUnit.valueOf(w.get(2).toUpperCase(Locale.ROOT)), tz, ms);
                }
                default:
                    throw new IllegalArgumentException("limit '" + spec
                            + "': unknown kind (expected THROTTLE, SLIDE, SLICE, LEASE or QUOTA)");
            }
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("limit '" + spec + "': " + e.getMessage(), e);
        }
    }

    private static void need(String spec, List<String> w, int n) {
        if (w.size() != n) {
            throw new IllegalArgumentException("limit '" + spec + "': expects " + (n - 1) + " numbers after "
                    + w.get(0));
        }
    }

    private static long n(List<String> w, int i) {
        return Long.parseLong(w.get(i));
    }

    static Policy from(RateLimitProperties p) {
        List<Rule> rules = new ArrayList<>();
        for (RateLimitProperties.Rule r : p.getRules()) {
            rules.add(rule(r));
        }
        List<Route> routes = new ArrayList<>();
        for (RateLimitProperties.Route r : p.getRoutes()) {
            List<Rule> rr = new ArrayList<>();
            for (RateLimitProperties.Rule x : r.getRules()) {
                rr.add(rule(x));
            }
            routes.add(new Route(r.getPath(), r.getMethods(), rr));
        }
        return new Policy(rules, routes);
    }

    private static Rule rule(RateLimitProperties.Rule r) {
        if (r.getName() == null || r.getKey() == null || r.getLimit() == null) {
            throw new IllegalArgumentException("a ratelimit rule needs name, key and limit");
        }
        Limit limit = parseLimit(r.getLimit());
        if (r.getBlock() != null) {
            limit = limit.withBlock(blockIn(r.getName(), r.getBlock(), limit.ms()));
        }
        return new Rule(r.getName(), r.getKey(), r.isShadow() ? limit.asShadow() : limit);
    }

    /** A block in the limit's unit: milliseconds with MS, else whole seconds. */
    static long blockIn(String rule, java.time.Duration block, boolean ms) {
        if (ms) {
            return block.toMillis();
        }
        if (block.toNanosPart() != 0) {
            throw new IllegalArgumentException("rule '" + rule + "': block " + block
                    + " is not a whole number of seconds (the limit's unit; add MS to the limit for milliseconds)");
        }
        return block.toSeconds();
    }
}
