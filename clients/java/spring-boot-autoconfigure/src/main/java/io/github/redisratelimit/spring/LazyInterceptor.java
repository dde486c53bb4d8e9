package io.github.redisratelimit.spring;

import java.util.function.Supplier;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;

/** The interceptor made on its first call, so that the advisor (made early) does not make the limiter early. */
final class LazyInterceptor implements MethodInterceptor {
    private final Supplier<RateLimitInterceptor> make;
    private volatile RateLimitInterceptor made;

    LazyInterceptor(Supplier<RateLimitInterceptor> make) {
        this.make = make;
    }

    @Override
    public Object invoke(MethodInvocation invocation) throws Throwable {
        RateLimitInterceptor i = made;
        if (i == null) {
            synchronized (this) {
                if (made == null) {
                    made = make.get();
                }
                i = made;
            }
        }
        return i.invoke(invocation);
    }
}
