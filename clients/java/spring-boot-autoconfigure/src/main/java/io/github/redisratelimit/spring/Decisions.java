package io.github.redisratelimit.spring;

import io.github.redisratelimit.AllowResult;
import io.github.redisratelimit.Entry;
import io.github.redisratelimit.RateLimitHeaders;
import io.github.redisratelimit.RateLimiter;
import io.github.redisratelimit.Result;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;

/**
 * A request's limits decided with their SHADOW rules (docs/middleware.md):
 * one RL.ALLOW where at least one rule is enforced (the shadow rules as
 * SHADOW specs: decided, shown, never refusing); where every rule is
 * shadow (which RL.ALLOW refuses), one {@code RL.ALLOW 1 key spec} per rule
 * with SHADOW left out, in one pipeline, their refusals ignored: each key
 * then records what a shadow limit records. Shared by the servlet filter,
 * the WebFilter, {@code @RateLimit} and the gateway's limiter.
 */
public final class Decisions {
    private Decisions() {}

    /** The metrics' {@code ratelimit.result} of a rule that allowed. */
    public static final String ALLOWED = "allowed";
    /** An enforced rule that refused. */
    public static final String LIMITED = "limited";
    /** A shadow rule that would have refused. */
    public static final String SHADOW_LIMITED = "shadow_limited";
    /** The call failed. */
    public static final String ERROR = "error";

    /**
     * A decision.
     *
     * @param call the RL.ALLOW's reply, or null when every rule is shadow
     * @param each each rule's own result, in order
     */
    public record Decided(AllowResult call, List<Result> each) {
        /** Copies the list. */
        public Decided {
            each = List.copyOf(each);
        }

        /** Whether the request is refused (never, when every rule is shadow). */
        public boolean limited() {
            return call != null && call.limited();
        }
    }

    /**
     * Decides {@code entries}.
     *
     * @param limiter  the limiter
     * @param entries  the rules' limits on their keys
     * @param quantity what the request costs
     * @param leaseId  the LEASE rules' id, or null
     * @return the decision
     */
    public static CompletionStage<Decided> decide(RateLimiter limiter, List<Entry> entries, long quantity,
                                                  String leaseId) {
        if (entries.stream().anyMatch(e -> !e.limit().shadow())) {
            return limiter.allowAsync(entries, quantity, leaseId).thenApply(r -> new Decided(r, r.results()));
        }
        List<Entry> alone = entries.stream().map(e -> Entry.of(e.key(), e.limit().enforced())).toList();
        return limiter.allowEachAsync(alone, quantity, leaseId).thenApply(rs -> {
            List<Result> each = new ArrayList<>(rs.size());
            rs.forEach(r -> each.add(r.asResult()));
            return new Decided(null, each);
        });
    }

    /**
     * Each rule's own outcome: allowed, limited (an enforced rule that
     * refused) or shadow_limited (a shadow rule that would have).
     *
     * @param entries the rules' limits
     * @param d       the decision
     * @return the outcomes, in order
     */
    public static List<String> outcomes(List<Entry> entries, Decided d) {
        List<String> out = new ArrayList<>(entries.size());
        for (int i = 0; i < entries.size(); i++) {
            if (!d.each().get(i).limited()) {
                out.add(ALLOWED);
            } else {
                out.add(entries.get(i).limit().shadow() ? SHADOW_LIMITED : LIMITED);
            }
        }
        return out;
    }

    /**
     * The header fields of the enforced rules (a shadow rule is not the
     * client's business); none when every rule is shadow.
     *
     * @param named the rules' names and limits, in order
     * @param d     the decision
     * @return the header fields
     */
    public static Map<String, String> headers(List<RateLimitHeaders.Named> named, Decided d) {
        AllowResult r = d.call();
        if (r == null) {
            return Map.of();
        }
        List<RateLimitHeaders.Named> enforced = new ArrayList<>(named.size());
        List<Result> results = new ArrayList<>(named.size());
        int index = 0;
        for (int i = 0; i < named.size(); i++) {
            if (!named.get(i).limit().shadow()) {
                enforced.add(named.get(i));
                results.add(r.results().get(i));
                if (i == r.index() - 1) {
                    index = enforced.size();
                }
            }
        }
        if (index == 0) {
            // The module names an enforced limit; keep to the first should it not.
            index = 1;
        }
        return RateLimitHeaders.of(new AllowResult(r.limited(), r.limit(), r.remaining(), r.retryAfter(),
                r.resetAfter(), index, results), enforced);
    }
}
