package io.github.redisratelimit.spring;

import jakarta.servlet.AsyncEvent;
import jakarta.servlet.AsyncListener;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * The policy on every request of a servlet application: one RL.ALLOW per
 * request ({@link RequestLimiter}); the header fields on the response
 * (a handler's own field wins); the leases released and 5xx units given
 * back when the response ends, an async request's too.
 */
public class RateLimitServletFilter extends OncePerRequestFilter {
    private final RequestLimiter limiter;

    /** @param limiter the decision */
    public RateLimitServletFilter(RequestLimiter limiter) {
        this.limiter = limiter;
    }

    @Override
    protected boolean shouldNotFilterAsyncDispatch() {
        return true;
    }

    static RateLimitRequest request(HttpServletRequest r) {
        return new RateLimitRequest(r.getMethod(), r.getRequestURI(), r.getRemoteAddr(), name -> {
            java.util.Enumeration<String> e = r.getHeaders(name);
            return e == null ? List.of() : Collections.list(e);
        }, r);
    }

    @Override
    protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
            throws ServletException, IOException {
        long arrival = System.nanoTime();
        RequestLimiter.Outcome outcome;
        try {
            // The stage has its own deadline; this wait only guards against a stage that never ends.
            outcome = limiter.decide(request(request), arrival).toCompletableFuture()
                    .get(limiter.timeout().toMillis() + 1000, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ServletException(e);
        } catch (ExecutionException | TimeoutException e) {
            outcome = new RequestLimiter.Answer(503, Map.of(), "rate limiter unavailable\n");
        }
        if (outcome instanceof RequestLimiter.Answer a) {
            response.setStatus(a.status());
            a.headers().forEach(response::setHeader);
            response.setContentType("text/plain; charset=utf-8");
            response.getOutputStream().write(a.body().getBytes(StandardCharsets.UTF_8));
            return;
        }
        if (!(outcome instanceof RequestLimiter.Allowed allowed)) {
            chain.doFilter(request, response);
            return;
        }
        allowed.headers().forEach((name, value) -> {
            if (!response.containsHeader(name)) {
                response.setHeader(name, value);
            }
        });
        AtomicBoolean finished = new AtomicBoolean();
        boolean async = false;
        int status = 500;
        try {
            chain.doFilter(request, response);
            status = response.getStatus();
            async = request.isAsyncStarted();
            if (async) {
                request.getAsyncContext().addListener(new AsyncListener() {
                    @Override
                    public void onComplete(AsyncEvent event) {
                        finish(allowed, ((HttpServletResponse) event.getSuppliedResponse()).getStatus(), finished);
                    }

                    @Override
                    public void onTimeout(AsyncEvent event) {
                        finish(allowed, 500, finished);
                    }

                    @Override
                    public void onError(AsyncEvent event) {
                        finish(allowed, 500, finished);
                    }

                    @Override
                    public void onStartAsync(AsyncEvent event) {
                        event.getAsyncContext().addListener(this);
                    }
                });
            }
        } finally {
            if (!async) {
                finish(allowed, status, finished);
            }
        }
    }

    private void finish(RequestLimiter.Allowed allowed, int status, AtomicBoolean finished) {
        if (finished.compareAndSet(false, true)) {
            limiter.finish(allowed, status);
        }
    }
}
