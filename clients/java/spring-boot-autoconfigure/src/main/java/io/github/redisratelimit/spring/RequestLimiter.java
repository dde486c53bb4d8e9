package io.github.redisratelimit.spring;

import io.github.redisratelimit.AllowResult;
import io.github.redisratelimit.Entry;
import io.github.redisratelimit.Lease;
import io.github.redisratelimit.RateLimitHeaders;
import io.github.redisratelimit.RateLimiter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;

/**
 * The middleware's decision for a request, whichever the stack
 * (docs/middleware.md): its rules' keys from the request's identity, one
 * RL.ALLOW within the timeout counted from the request's arrival, the
 * answer (429 with the header fields, 503 or 500 failing closed, through
 * failing open), the leases to release and the units to give back when the
 * response ends. The servlet filter and the WebFilter only adapt it.
 */
public final class RequestLimiter {
    /** What to do with a request. */
    public sealed interface Outcome {}

    /** Let it through untouched: skipped, no rule, or failing open. */
    public record Pass() implements Outcome {}

    /**
     * Answer it here.
     *
     * @param status  429, 503 or 500
     * @param headers the header fields (a 429's; none for a failure)
     * @param body    the text/plain body
     */
    public record Answer(int status, Map<String, String> headers, String body) implements Outcome {}

    /**
     * Run the application, adding the header fields, then call {@link #finish} with its status.
     *
     * @param headers  the decision's header fields (none when every rule is shadow)
     * @param rules    the rules and their keys
     * @param leaseId  the lease id of the LEASE rules, or null
     * @param recorded the rules that recorded the request (all but shadow rules that would refuse)
     */
    public record Allowed(Map<String, String> headers, List<Entry> rules, String leaseId, List<Entry> recorded)
            implements Outcome {}

    private static final Pass PASS = new Pass();

    private final RateLimiter limiter;
    private final PolicySource policies;
    private final RateLimitProperties.Filter options;
    private final Identity identity;
    private final ClientIdResolver clientId;
    private final RequestSkipper skipper;
    private final RateLimitMetrics metrics;
    private final FailureLog log;

    /**
     * @param limiter  the limiter
     * @param policies where the policy is read at each request
     * @param options  the filter's options
     * @param clientId the application's $client, or null
     * @param skipper  the requests to skip, or null
     * @param metrics  the meters
     */
    public RequestLimiter(RateLimiter limiter, PolicySource policies, RateLimitProperties.Filter options,
                          ClientIdResolver clientId, RequestSkipper skipper, RateLimitMetrics metrics) {
        this.limiter = limiter;
        this.policies = policies;
        this.options = options;
        this.identity = new Identity(options.getTrustedProxies(), options.getProxyHeader(), options.getClientHeader());
        this.clientId = clientId;
        this.skipper = skipper;
        this.metrics = metrics;
        this.log = new FailureLog(options.isFailOpen());
    }

    /** The timeout of a decision. */
    public Duration timeout() {
        return options.getTimeout();
    }

    static String expand(String template, String client, String ip, String path, String method) {
        if (template.indexOf('$') < 0) {
            return template;
        }
        return template.replace("$client", client).replace("$ip", ip).replace("$path", path)
                .replace("$method", method);
    }

    /**
     * The decision for {@code request}, which arrived at {@code arrivalNanos} (System.nanoTime).
     *
     * @param request      the request
     * @param arrivalNanos when it arrived
     * @return what to do; never completes exceptionally
     */
    public CompletionStage<Outcome> decide(RateLimitRequest request, long arrivalNanos) {
        List<Policy.Rule> rules;
        List<Entry> entries;
        String leaseId = null;
        try {
            if (skipper != null && skipper.skip(request)) {
                return CompletableFuture.completedFuture(PASS);
            }
            rules = policies.get().rulesFor(request.method(), request.path());
            if (rules.isEmpty()) {
                return CompletableFuture.completedFuture(PASS);
            }
            String peer = Identity.peer(request.peer());
            String ip = identity.ip(peer, request.headers());
            String client = identity.client(clientId == null ? null : clientId.clientId(request), peer, ip,
                    request.headers());
            entries = new ArrayList<>(rules.size());
            for (Policy.Rule r : rules) {
                entries.add(Entry.of(expand(r.key(), client, ip, request.path(), request.method()), r.limit()));
                if (r.limit() instanceof Lease && leaseId == null) {
                    leaseId = RateLimiter.newLeaseId();
                }
            }
        } catch (RuntimeException e) {
            return CompletableFuture.completedFuture(failed(e, List.of(), List.of(), null, arrivalNanos, false));
        }
        long left = options.getTimeout().toNanos() - (System.nanoTime() - arrivalNanos);
        if (left <= 0) {
            return CompletableFuture.completedFuture(failed(new java.util.concurrent.TimeoutException(), rules,
                    List.of(), null, arrivalNanos, false));
        }
        String id = leaseId;
        CompletableFuture<Decisions.Decided> call;
        try {
            call = Decisions.decide(limiter, entries, options.getQuantity(), id).toCompletableFuture();
        } catch (RuntimeException e) {
            return CompletableFuture.completedFuture(failed(e, rules, entries, id, arrivalNanos, true));
        }
        return call.orTimeout(left, TimeUnit.NANOSECONDS).handle((d, err) -> {
            if (err != null) {
                return failed(err, rules, entries, id, arrivalNanos, true);
            }
            log.answered();
            List<RateLimitHeaders.Named> named = new ArrayList<>(rules.size());
            for (Policy.Rule r : rules) {
                named.add(new RateLimitHeaders.Named(r.name(), r.limit()));
            }
            List<String> outcomes = Decisions.outcomes(entries, d);
            for (int i = 0; i < rules.size(); i++) {
                metrics.decided(rules.get(i).name(), outcomes.get(i));
            }
            Map<String, String> headers = Decisions.headers(named, d);
            metrics.timed(d.limited() ? Decisions.LIMITED : Decisions.ALLOWED, System.nanoTime() - arrivalNanos);
            if (d.limited()) {
                String retry = headers.get("Retry-After");
                return new Answer(429, headers, retry == null ? "rate limited: this request exceeds the capacity\n"
                        : "rate limited: retry in " + retry + " s\n");
            }
            // What refund-5xx may give back: what was recorded (a shadow rule that would refuse recorded nothing).
            List<Entry> recorded = new ArrayList<>(entries.size());
            for (int i = 0; i < entries.size(); i++) {
                if (!d.each().get(i).limited()) {
                    recorded.add(entries.get(i));
                }
            }
            return new Allowed(headers, entries, id, recorded);
        });
    }

    private Outcome failed(Throwable err, List<Policy.Rule> rules, List<Entry> entries, String leaseId,
                           long arrivalNanos, boolean called) {
        for (Policy.Rule r : rules) {
            metrics.decided(r.name(), Decisions.ERROR);
        }
        if (called) {
            metrics.timed(Decisions.ERROR, System.nanoTime() - arrivalNanos);
        }
        boolean config = FailureLog.isConfigurationError(err);
        if (config) {
            log.configuration(err);
        } else {
            log.outage(err);
            if (leaseId != null) {
                // A late RL.ALLOW would hold the slot for its whole ttl.
                release(entries, leaseId);
            }
        }
        if (options.isFailOpen()) {
            return PASS;
        }
        return config ? new Answer(500, Map.of(), "rate limiter misconfigured\n")
                : new Answer(503, Map.of(), "rate limiter unavailable\n");
    }

    /**
     * When the response is over: releases the leases, and on a 5xx with
     * refund-5xx gives the rate rules' units back. Runs in the background,
     * each call with a deadline of the timeout.
     *
     * @param allowed the decision
     * @param status  the response's status (500 when the application threw)
     */
    public void finish(Allowed allowed, int status) {
        if (allowed.leaseId() != null) {
            release(allowed.rules(), allowed.leaseId());
        }
        if (options.isRefund5xx() && status >= 500 && status <= 599) {
            for (Entry e : allowed.recorded()) {
                if (!(e.limit() instanceof Lease)) {
                    limiter.refundAsync(e.key(), e.limit(), options.getQuantity()).toCompletableFuture()
                            .orTimeout(options.getTimeout().toMillis(), TimeUnit.MILLISECONDS)
                            .exceptionally(x -> null);
                }
            }
        }
    }

    private void release(List<Entry> entries, String leaseId) {
        for (Entry e : entries) {
            if (e.limit() instanceof Lease) {
                limiter.releaseAsync(e.key(), leaseId).toCompletableFuture()
                        .orTimeout(options.getTimeout().toMillis(), TimeUnit.MILLISECONDS)
                        .exceptionally(x -> false);
            }
        }
    }
}
