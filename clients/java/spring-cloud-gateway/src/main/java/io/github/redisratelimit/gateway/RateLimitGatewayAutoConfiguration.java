package io.github.redisratelimit.gateway;

import io.github.redisratelimit.RateLimiter;
import io.github.redisratelimit.spring.RateLimitAutoConfiguration;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.cloud.gateway.filter.ratelimit.AbstractRateLimiter;
import org.springframework.cloud.gateway.support.ConfigurationService;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Primary;

/** The gateway's RateLimiter and the lease filter, where Spring Cloud Gateway (WebFlux) is. */
@AutoConfiguration(after = RateLimitAutoConfiguration.class,
        afterName = "org.springframework.cloud.gateway.config.GatewayAutoConfiguration")
@ConditionalOnClass(AbstractRateLimiter.class)
@ConditionalOnBean(RateLimiter.class)
public class RateLimitGatewayAutoConfiguration {
    /**
     * @param limiter       the limiter
     * @param configuration the gateway's configuration service
     * @return the RateLimiter, named {@value RedisRateLimitGatewayLimiter#BEAN}; primary, so that
     *         RequestRateLimiter takes it by default beside the gateway's own RedisRateLimiter
     */
    @Bean(RedisRateLimitGatewayLimiter.BEAN)
    @Primary
    @ConditionalOnMissingBean
    public RedisRateLimitGatewayLimiter redisRateLimitGatewayLimiter(RateLimiter limiter,
                                                                     ConfigurationService configuration) {
        return new RedisRateLimitGatewayLimiter(limiter, configuration, new RedisRateLimitGatewayLimiter.Config());
    }

    /**
     * @param limiter the limiter
     * @return the filter that releases a request's leases
     */
    @Bean
    @ConditionalOnMissingBean
    public LeaseReleaseFilter rateLimitLeaseReleaseFilter(RateLimiter limiter) {
        return new LeaseReleaseFilter(limiter);
    }
}
