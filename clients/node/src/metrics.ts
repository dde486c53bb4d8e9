// What a middleware reports of its decisions (docs/metrics.md): the
// DecisionMetrics interface the middlewares call, and its OpenTelemetry
// implementation over the OpenTelemetry metrics API (@opentelemetry/api,
// an optional peer dependency: loaded only when openTelemetryMetrics() is
// called without a meter, so that the package works without it).
//
// Meter (instrumentation scope) `redis-ratelimit`; instruments:
// - counter `ratelimit.decisions` (`{decision}`): one per matched rule per
//   request, attributes `ratelimit.rule` (the rule's name) and
//   `ratelimit.result` (`allowed`, `limited`, `shadow_limited`, `error`);
// - histogram `ratelimit.decision.duration` (`s`): one per request that
//   called Redis, attribute `ratelimit.result` (`allowed`, `limited`, `error`).
// No key is ever an attribute (keys are unbounded; rule names are not).

/** A rule's own outcome (`ratelimit.result` of `ratelimit.decisions`). */
export type RuleOutcome = 'allowed' | 'limited' | 'shadow_limited' | 'error';
/** A request's outcome (`ratelimit.result` of `ratelimit.decision.duration`). */
export type RequestOutcome = 'allowed' | 'limited' | 'error';

/** Told once per request a middleware decided (or failed to). */
export interface DecisionMetrics {
  /**
   * `rules`: the names of the rules the request matched; `outcomes` each
   * one's own; `result` the request's; `seconds` how long the decision
   * took, undefined when no command was sent.
   */
  record(rules: readonly string[], outcomes: readonly RuleOutcome[], result: RequestOutcome, seconds: number | undefined): void;
}

/** The parts of an OpenTelemetry Counter used here. */
export interface CounterLike {
  add(value: number, attributes?: Record<string, string>): void;
}
/** The parts of an OpenTelemetry Histogram used here. */
export interface HistogramLike {
  record(value: number, attributes?: Record<string, string>): void;
}
/** The parts of an OpenTelemetry Meter used here (an `@opentelemetry/api` Meter is one). */
export interface MeterLike {
  createCounter(name: string, options?: { description?: string; unit?: string }): CounterLike;
  createHistogram(
    name: string,
    options?: { description?: string; unit?: string; advice?: { explicitBucketBoundaries?: number[] } },
  ): HistogramLike;
}
/** The parts of an OpenTelemetry MeterProvider used here. */
export interface MeterProviderLike {
  getMeter(name: string, version?: string): MeterLike;
}

export const METER_NAME = 'redis-ratelimit';
export const DECISIONS = 'ratelimit.decisions';
export const DURATION = 'ratelimit.decision.duration';
export const RULE = 'ratelimit.rule';
export const RESULT = 'ratelimit.result';
/**
 * The duration histogram's bucket bounds in seconds (a decision is a round
 * trip to Redis: tenths of a millisecond up to the middleware's timeout).
 */
export const BUCKETS: readonly number[] = Object.freeze([
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
]);

export interface OpenTelemetryOptions {
  /** The meter to record on (its scope should be `redis-ratelimit`). */
  readonly meter?: MeterLike;
  /** Else a meter `redis-ratelimit` of this provider; else of the global one (`metrics.getMeterProvider()`). */
  readonly meterProvider?: MeterProviderLike;
}

function version(): string | undefined {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return (require('../package.json') as { version?: string }).version;
  } catch {
    return undefined;
  }
}

function globalProvider(): MeterProviderLike {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return (require('@opentelemetry/api') as { metrics: MeterProviderLike }).metrics;
  } catch (err) {
    throw new Error(
      `openTelemetryMetrics() needs the OpenTelemetry API (${(err as Error).message.split('\n')[0]}): ` +
        'npm install @opentelemetry/api, or pass { meter } or { meterProvider }',
    );
  }
}

/**
 * A middleware's `metrics`: records the decisions on an OpenTelemetry
 * meter (docs/metrics.md names the instruments): `options.meter`, else the
 * meter `redis-ratelimit` of `options.meterProvider` or of the global
 * provider (which needs `@opentelemetry/api` installed; without an SDK
 * registered it records nothing).
 */
export function openTelemetryMetrics(options: OpenTelemetryOptions = {}): DecisionMetrics {
  const meter = options.meter ?? (options.meterProvider ?? globalProvider()).getMeter(METER_NAME, version());
  const decisions = meter.createCounter(DECISIONS, {
    unit: '{decision}',
    description: 'Rate limit decisions, one per matched rule per request',
  });
  const duration = meter.createHistogram(DURATION, {
    unit: 's',
    description: "How long a request's rate limit decision took",
    advice: { explicitBucketBoundaries: [...BUCKETS] },
  });
  return {
    record(rules, outcomes, result, seconds) {
      rules.forEach((rule, i) => decisions.add(1, { [RULE]: rule, [RESULT]: outcomes[i]! }));
      if (seconds !== undefined) duration.record(seconds, { [RESULT]: result });
    },
  };
}
