package io.github.redisratelimit.spring;

import io.github.redisratelimit.Entry;
import io.github.redisratelimit.Lease;
import io.github.redisratelimit.Limit;
import io.github.redisratelimit.Quota;
import io.github.redisratelimit.RateLimitException;
import io.github.redisratelimit.RateLimitHeaders;
import io.github.redisratelimit.RateLimiter;
import io.github.redisratelimit.Slice;
import io.github.redisratelimit.Slide;
import io.github.redisratelimit.Throttle;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.context.expression.BeanFactoryResolver;
import org.springframework.context.expression.MethodBasedEvaluationContext;
import org.springframework.core.DefaultParameterNameDiscoverer;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.expression.Expression;
import org.springframework.expression.spel.standard.SpelExpressionParser;

/**
 * Decides a method's {@link RateLimit}s in one RL.ALLOW before it runs: the
 * keys from their SpEL expressions over the arguments; refused, throws
 * {@link RateLimitedException} or calls the fallback; a LEASE limit's lease
 * released when the method returns or throws.
 */
public class RateLimitInterceptor implements MethodInterceptor {
    private record Compiled(String name, Expression key, Limit limit) {}

    private record Plan(List<Compiled> limits, long quantity, String fallback, boolean leases) {}

    private final RateLimiter limiter;
    private final RateLimitProperties properties;
    private final RateLimitMetrics metrics;
    private final BeanFactory beans;
    private final SpelExpressionParser parser = new SpelExpressionParser();
    private final ParameterNameDiscoverer names = new DefaultParameterNameDiscoverer();
    private final Map<Method, Plan> plans = new ConcurrentHashMap<>();
    private final FailureLog log;

    /**
     * @param limiter    the limiter
     * @param properties the properties (key prefix, fail open)
     * @param metrics    the meters
     * @param beans      for {@code @bean} references in the keys
     */
    public RateLimitInterceptor(RateLimiter limiter, RateLimitProperties properties, RateLimitMetrics metrics,
                                BeanFactory beans) {
        this.limiter = limiter;
        this.properties = properties;
        this.metrics = metrics;
        this.beans = beans;
        this.log = new FailureLog(properties.getFilter().isFailOpen());
    }

    /** Whether a method carries @RateLimit. */
    static boolean limited(Method method) {
        return !AnnotatedElementUtils.findMergedRepeatableAnnotations(method, RateLimit.class, RateLimits.class)
                .isEmpty();
    }

    static Limit limitOf(RateLimit a) {
        Limit l = switch (a.kind()) {
            case THROTTLE -> new Throttle(a.maxBurst(), a.count(), a.period(), a.ms());
            case SLIDE -> new Slide(a.limit(), a.window(), a.precision() < 0 ? null : a.precision(), a.ms());
            case SLICE -> new Slice(a.limit(), a.window(), a.slices(), a.ms());
            case LEASE -> new Lease(a.limit(), a.ttl(), a.ms());
            case QUOTA -> new Quota(a.limit(), a.unit(), a.tz().isEmpty() ? null : a.tz(), a.ms());
        };
        if (a.block() != 0) {
            l = l.withBlock(a.block());
        }
        return a.shadow() ? l.asShadow() : l;
    }

    private Plan plan(Method method) {
        return plans.computeIfAbsent(method, m -> {
            Set<RateLimit> found = AnnotatedElementUtils.findMergedRepeatableAnnotations(m, RateLimit.class,
                    RateLimits.class);
            List<Compiled> out = new ArrayList<>();
            int i = 0;
            long quantity = 1;
            String fallback = "";
            boolean leases = false;
            for (RateLimit a : found) {
                i++;
                String name = a.name().isEmpty() ? m.getName() + "-" + i : a.name();
                out.add(new Compiled(name, parser.parseExpression(a.key()), limitOf(a)));
                if (i == 1) {
                    quantity = a.quantity();
                    fallback = a.fallback();
                }
                leases |= a.kind() == RateLimit.Kind.LEASE;
            }
            return new Plan(List.copyOf(out), quantity, fallback, leases);
        });
    }

    @Override
    public Object invoke(MethodInvocation invocation) throws Throwable {
        Object target = invocation.getThis();
        Class<?> type = target == null ? invocation.getMethod().getDeclaringClass() : AopUtils.getTargetClass(target);
        Method method = AopUtils.getMostSpecificMethod(invocation.getMethod(), type);
        Plan plan = plan(method);
        if (plan.limits().isEmpty()) {
            return invocation.proceed();
        }
        MethodBasedEvaluationContext context = new MethodBasedEvaluationContext(target, method,
                invocation.getArguments(), names);
        context.setBeanResolver(new BeanFactoryResolver(beans));
        List<Entry> entries = new ArrayList<>(plan.limits().size());
        List<RateLimitHeaders.Named> named = new ArrayList<>(plan.limits().size());
        for (Compiled c : plan.limits()) {
            Object key = c.key().getValue(context);
            entries.add(Entry.of(properties.getKeyPrefix() + key, c.limit()));
            named.add(new RateLimitHeaders.Named(c.name(), c.limit()));
        }
        String leaseId = plan.leases() ? RateLimiter.newLeaseId() : null;
        long start = System.nanoTime();
        Decisions.Decided d;
        try {
            d = Decisions.decide(limiter, entries, plan.quantity(), leaseId).toCompletableFuture()
                    .orTimeout(properties.getFilter().getTimeout().toMillis(), TimeUnit.MILLISECONDS).join();
        } catch (CompletionException x) {
            Throwable e = FailureLog.unwrap(x);
            for (RateLimitHeaders.Named n : named) {
                metrics.decided(n.name(), Decisions.ERROR);
            }
            metrics.timed(Decisions.ERROR, System.nanoTime() - start);
            if (FailureLog.isConfigurationError(e)) {
                log.configuration(e);
                throw e;
            }
            log.outage(e);
            if (properties.getFilter().isFailOpen()) {
                return invocation.proceed();
            }
            throw e instanceof TimeoutException
                    ? new RateLimitException("rate limiter unavailable: no answer within the timeout", e) : e;
        }
        log.answered();
        List<String> outcomes = Decisions.outcomes(entries, d);
        for (int i = 0; i < entries.size(); i++) {
            metrics.decided(named.get(i).name(), outcomes.get(i));
        }
        metrics.timed(d.limited() ? Decisions.LIMITED : Decisions.ALLOWED, System.nanoTime() - start);
        if (d.limited()) {
            RateLimitedException refused = new RateLimitedException(d.call(), Decisions.headers(named, d));
            if (plan.fallback().isEmpty()) {
                throw refused;
            }
            return fallback(target, method, plan.fallback(), invocation.getArguments(), refused);
        }
        try {
            return invocation.proceed();
        } finally {
            if (leaseId != null) {
                for (Entry e : entries) {
                    if (e.limit() instanceof Lease) {
                        limiter.releaseAsync(e.key(), leaseId);
                    }
                }
            }
        }
    }

    private static Object fallback(Object target, Method method, String name, Object[] args,
                                   RateLimitedException refused) throws Throwable {
        Class<?>[] params = method.getParameterTypes();
        Class<?>[] withException = Arrays.copyOf(params, params.length + 1);
        withException[params.length] = RateLimitedException.class;
        Class<?> type = AopUtils.getTargetClass(target);
        Method m;
        Object[] callArgs;
        try {
            m = findMethod(type, name, withException);
            callArgs = Arrays.copyOf(args, args.length + 1);
            callArgs[args.length] = refused;
        } catch (NoSuchMethodException e) {
            try {
                m = findMethod(type, name, params);
                callArgs = args;
            } catch (NoSuchMethodException again) {
                throw new IllegalStateException("@RateLimit fallback '" + name + "' of " + method
                        + ": no method " + name + " with the same parameters (and optionally a last "
                        + "RateLimitedException) in " + type.getName(), again);
            }
        }
        m.setAccessible(true);
        try {
            return m.invoke(target, callArgs);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    private static Method findMethod(Class<?> type, String name, Class<?>[] params) throws NoSuchMethodException {
        for (Class<?> c = type; c != null; c = c.getSuperclass()) {
            try {
                return c.getDeclaredMethod(name, params);
            } catch (NoSuchMethodException e) {
                // the superclass may have it
            }
        }
        throw new NoSuchMethodException(name);
    }
}
