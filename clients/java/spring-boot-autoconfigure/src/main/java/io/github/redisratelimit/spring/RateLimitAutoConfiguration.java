package io.github.redisratelimit.spring;

import io.github.redisratelimit.RateLimiter;
import io.github.redisratelimit.RedisConnection;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.springframework.aop.Advisor;
import org.springframework.aop.support.StaticMethodMatcherPointcutAdvisor;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Role;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * redis-ratelimit on the application's RedisConnectionFactory: a
 * {@link RateLimiter}, the {@link PolicySource} of the {@code ratelimit.*}
 * properties, {@link RateLimit} on any bean's methods, the servlet filter or
 * the WebFilter, Micrometer meters. Every bean is
 * {@code @ConditionalOnMissingBean}: declare your own to replace it.
 *
 * <p>One jar for Boot 3.5 and 4.0: Redis's auto-configuration is named by
 * both its class names (Boot 4 moved it into spring-boot-data-redis), and
 * nothing here calls an API that Boot 4 or Framework 7 moved or removed.
 */
@AutoConfiguration(afterName = {
        "org.springframework.boot.autoconfigure.data.redis.RedisAutoConfiguration",     // Boot 3
        "org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration"}) // Boot 4
@ConditionalOnClass({RedisConnectionFactory.class, RateLimiter.class})
@ConditionalOnBean(RedisConnectionFactory.class)
@ConditionalOnProperty(prefix = "ratelimit", name = "enabled", matchIfMissing = true)
@EnableConfigurationProperties(RateLimitProperties.class)
public class RateLimitAutoConfiguration {
    /**
     * The connection the limiter sends on: a Lettuce connection of the
     * factory's own client (standalone, sentinel, cluster), or any other
     * factory through Spring Data's execute.
     *
     * @param factory the application's factory
     * @return the connection
     */
    @Bean(destroyMethod = "")
    @ConditionalOnMissingBean
    public RedisConnection rateLimitConnection(RedisConnectionFactory factory) {
        if (factory instanceof LettuceConnectionFactory lettuce) {
            return new LazyLettuceConnection(lettuce::getRequiredNativeClient);
        }
        ExecutorService pool = Executors.newCachedThreadPool(task -> {
            Thread t = new Thread(task, "redis-ratelimit");
            t.setDaemon(true);
            return t;
        });
        return new SpringDataConnection(factory, pool);
    }

    /**
     * @param connection the connection
     * @param properties the properties
     * @return the limiter
     */
    @Bean
    @ConditionalOnMissingBean
    public RateLimiter rateLimiter(RedisConnection connection, RateLimitProperties properties) {
        RateLimiter.Builder b = RateLimiter.builder(connection).backend(properties.getBackend());
        if (properties.getPrefix() != null) {
            b.prefix(properties.getPrefix());
        }
        return b.build();
    }

    /**
     * @param properties the properties
     * @return the policy of ratelimit.rules and ratelimit.routes, replaceable at run time
     */
    @Bean
    @ConditionalOnMissingBean
    public PolicySource rateLimitPolicySource(RateLimitProperties properties) {
        return new PolicySource(Policy.from(properties));
    }

    /** The meters, where Micrometer is on the class path (the registry looked up at the first decision). */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(MeterRegistry.class)
    static class Micrometer {
        @Bean
        @ConditionalOnMissingBean
        RateLimitMetrics rateLimitMetrics(ObjectProvider<MeterRegistry> registry) {
            return new MicrometerMetrics(registry::getIfAvailable);
        }
    }

    /** No meters without Micrometer. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnMissingClass("io.micrometer.core.instrument.MeterRegistry")
    static class NoMicrometer {
        @Bean
        @ConditionalOnMissingBean
        RateLimitMetrics rateLimitMetrics() {
            return RateLimitMetrics.NONE;
        }
    }

    /**
     * @param limiter    the limiter
     * @param policies   the policy source
     * @param properties the properties
     * @param clientId   the application's $client
     * @param skipper    the application's skipped requests
     * @param metrics    the meters
     * @return the decision of the filters
     */
    @Bean
    @ConditionalOnMissingBean
    public RequestLimiter rateLimitRequestLimiter(RateLimiter limiter, PolicySource policies,
                                                  RateLimitProperties properties,
                                                  ObjectProvider<ClientIdResolver> clientId,
                                                  ObjectProvider<RequestSkipper> skipper, RateLimitMetrics metrics) {
        return new RequestLimiter(limiter, policies, properties.getFilter(), clientId.getIfAvailable(),
                skipper.getIfAvailable(), metrics);
    }

    /**
     * The advisor of {@link RateLimit} methods (Spring AOP, no AspectJ needed).
     *
     * @param limiter    the limiter
     * @param properties the properties
     * @param metrics    the meters
     * @param beans      the bean factory
     * @return the advisor
     */
    @Bean
    @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
    @ConditionalOnMissingBean(name = "rateLimitAdvisor")
    public static Advisor rateLimitAdvisor(ObjectProvider<RateLimiter> limiter,
                                           ObjectProvider<RateLimitProperties> properties,
                                           ObjectProvider<RateLimitMetrics> metrics, BeanFactory beans) {
        StaticMethodMatcherPointcutAdvisor advisor = new StaticMethodMatcherPointcutAdvisor() {
            private static final long serialVersionUID = 1L;

            @Override
            public boolean matches(java.lang.reflect.Method method, Class<?> targetClass) {
                return RateLimitInterceptor.limited(
                        org.springframework.aop.support.AopUtils.getMostSpecificMethod(method, targetClass));
            }
        };
        advisor.setAdvice(new LazyInterceptor(() -> new RateLimitInterceptor(limiter.getObject(),
                properties.getObject(), metrics.getObject(), beans)));
        return advisor;
    }

    /** Answers RateLimitedException with 429. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnWebApplication
    @ConditionalOnClass(name = "org.springframework.web.bind.annotation.RestControllerAdvice")
    static class Handler {
        @Bean
        @ConditionalOnMissingBean
        RateLimitExceptionHandler rateLimitExceptionHandler() {
            return new RateLimitExceptionHandler();
        }
    }

    /** The servlet filter. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
    @ConditionalOnClass(name = "jakarta.servlet.Filter")
    @ConditionalOnProperty(prefix = "ratelimit.filter", name = "enabled", matchIfMissing = true)
    static class Servlet {
        @Bean
        @ConditionalOnMissingBean(name = "rateLimitFilter")
        FilterRegistrationBean<RateLimitServletFilter> rateLimitFilter(RequestLimiter limiter,
                                                                       RateLimitProperties properties) {
            FilterRegistrationBean<RateLimitServletFilter> r = new FilterRegistrationBean<>(
                    new RateLimitServletFilter(limiter));
            r.setOrder(properties.getFilter().getOrder());
            r.setAsyncSupported(true);
            return r;
        }
    }

    /** The WebFlux WebFilter. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.REACTIVE)
    @ConditionalOnProperty(prefix = "ratelimit.filter", name = "enabled", matchIfMissing = true)
    static class Reactive {
        @Bean
        @ConditionalOnMissingBean
        RateLimitWebFilter rateLimitWebFilter(RequestLimiter limiter, RateLimitProperties properties) {
            return new RateLimitWebFilter(limiter, properties.getFilter().getOrder());
        }
    }
}
