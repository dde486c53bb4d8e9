package io.github.redisratelimit.spring;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The meters of {@link RateLimitMetrics} in a Micrometer registry, named as
 * docs/metrics.md names them for every package: the counter
 * {@code ratelimit.decisions} (tags {@code ratelimit.rule},
 * {@code ratelimit.result}; Prometheus {@code ratelimit_decisions_total})
 * and the timer {@code ratelimit.decision.duration} (tag
 * {@code ratelimit.result}; Prometheus
 * {@code ratelimit_decision_duration_seconds_bucket}, the same bucket
 * bounds as the other packages). Never a key as a tag.
 */
public final class MicrometerMetrics implements RateLimitMetrics {
    /** The counter's name. */
    public static final String DECISIONS = "ratelimit.decisions";
    /** The timer's name. */
    public static final String DURATION = "ratelimit.decision.duration";
    /** The rule's tag. */
    public static final String RULE = "ratelimit.rule";
    /** The outcome's tag. */
    public static final String RESULT = "ratelimit.result";
    /** The timer's histogram bounds: a round trip to Redis, a tenth of a millisecond to a second. */
    static final Duration[] BUCKETS = {Duration.ofNanos(100_000), Duration.ofNanos(250_000),
        Duration.ofNanos(500_000), Duration.ofMillis(1), Duration.ofNanos(2_500_000), Duration.ofMillis(5),
        Duration.ofMillis(10), Duration.ofMillis(25), Duration.ofMillis(50), Duration.ofMillis(100),
        Duration.ofMillis(250), Duration.ofMillis(500), Duration.ofSeconds(1)};

    private final Supplier<MeterRegistry> registries;
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
    public MicrometerMetrics(Supplier<MeterRegistry> registries) {
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

    @Override
    public void decided(String rule, String result) {
        MeterRegistry r = registry();
        if (r == null) {
            return;
        }
        counters.computeIfAbsent(rule + "\0" + result, k -> Counter.builder(DECISIONS)
                .description("Rate limit decisions, one per matched rule per request")
                .tag(RULE, rule).tag(RESULT, result).register(r)).increment();
    }

    @Override
    public void timed(String result, long nanos) {
        MeterRegistry r = registry();
        if (r == null) {
            return;
        }
        timers.computeIfAbsent(result, o -> Timer.builder(DURATION)
                .description("How long a request's rate limit decision took")
                .serviceLevelObjectives(BUCKETS)
                .tag(RESULT, o).register(r)).record(nanos, TimeUnit.NANOSECONDS);
    }
}
