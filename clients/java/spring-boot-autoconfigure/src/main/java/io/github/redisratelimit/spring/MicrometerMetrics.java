package io.github.redisratelimit.spring;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/** The meters of {@link RateLimitMetrics} in a Micrometer registry. */
public final class MicrometerMetrics implements RateLimitMetrics {
    private final java.util.function.Supplier<MeterRegistry> registries;
    private volatile MeterRegistry registry;
    private final ConcurrentHashMap<String, Counter> counters = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, Timer> timers = new ConcurrentHashMap<>();

    /** @param registry the registry */
    public MicrometerMetrics(MeterRegistry registry) {
        this.registries = () -> registry;
    }

    /**
     * The registry looked up at the first meter (the application's may be made after this).
     *
     * @param registries gives the registry, or null while there is none
     */
    public MicrometerMetrics(java.util.function.Supplier<MeterRegistry> registries) {
        this.registries = registries;
    }

    private MeterRegistry registry() {
        MeterRegistry r = registry;
        if (r == null) {
            r = registries.get();
            registry = r;
        }
        return r;
    }

    private Counter counter(String rule, String outcome) {
        return counters.computeIfAbsent(rule + "\0" + outcome, k -> Counter.builder("ratelimit.decisions")
                .description("Rate limit decisions, per rule and outcome")
                .tag("rule", rule).tag("outcome", outcome).register(registry()));
    }

    @Override
    public void decided(String rule, boolean limited) {
        if (registry() == null) {
            return;
        }
        counter(rule, limited ? "limited" : "allowed").increment();
    }

    @Override
    public void failed() {
        if (registry() == null) {
            return;
        }
        counter("", "error").increment();
    }

    @Override
    public void timed(String outcome, long nanos) {
        if (registry() == null) {
            return;
        }
        timers.computeIfAbsent(outcome, o -> Timer.builder("ratelimit.decision.time")
                .description("The time of a rate limit decision (one RL.ALLOW)")
                .tag("outcome", o).register(registry())).record(nanos, TimeUnit.NANOSECONDS);
    }
}
