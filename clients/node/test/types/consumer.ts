// A typed consumer of the installed package: tsc checks that its
// declarations serve this (make test).
import Redis from 'ioredis';
import {
  RateLimiter, throttle, slide, slice, lease, quota, rateLimitHeaders, expressRateLimit, fastifyRateLimit,
  ArgumentError, type Result, type AllowResult, type KeyState, executeLua, head, scriptSource,
  CLOCK_REREAD_MS, type ExecuteOptions, RateLimitedError, openTelemetryMetrics, type TopEntry,
  type DecisionMetrics, type ShadowDecision,
} from 'redis-ratelimit';
import { metrics } from '@opentelemetry/api';
import { MeterProvider } from '@opentelemetry/sdk-metrics';

async function main(): Promise<void> {
  const limiter = new RateLimiter(new Redis(), { backend: 'auto' });
  const r: Result = await limiter.throttle('rl:alice', 2, 1, 60, { quantity: 1 });
  const h: Record<string, string> = rateLimitHeaders(r, throttle(2, 1, 60));
  const a: AllowResult = await limiter.allow([['rl:{u}:s', slide(10, 1)], { key: 'rl:{u}:m', limit: slice(100, 60, 12) },
    ['rl:{u}:q', quota(1000, 'DAY', { tz: 'Europe/Berlin' })]]);
  const index: number = a.index;
  const bound: number = a.binding.remaining;
  const s: KeyState | null = await limiter.inspect('rl:alice');
  if (s?.type === 'slice') {
    const counts: readonly number[] = s.counts;
    void counts;
  }
  const out: number = await limiter.withLease('rl:jobs', lease(2, 30), async ({ id, signal }) => {
    void id;
    void signal.aborted;
    return 1;
  });
  try {
    await limiter.slide('k', 0, 1);
  } catch (err) {
    if (err instanceof ArgumentError) console.log(err.argument, err.spec);
  }
  // The Lua backend: forced, and one command line as the module would answer it.
  const lua = new RateLimiter(new Redis(), { backend: 'lua' });
  await lua.quota('rl:q', 5, 'DAY', { tz: 'Asia/Kolkata' });
  const options: ExecuteOptions = { now: Date.now() - 1000, buffers: true, deadline: Date.now() + 250, clock: 'auto' };
  const reply: unknown = await executeLua(new Redis(), ['RL.SLIDE', Buffer.from('k'), 10, 60n], options);
  const argument: string = head(['5', 'DAY', 'TZ', 'Asia/Kolkata'], undefined, Date.now() / 1000);
  const script: Buffer = scriptSource('RL.SLIDE');
  const margin: number = CLOCK_REREAD_MS;
  void [reply, argument, script, margin];
  // Round 5: BLOCK, UNITS, SHADOW; charge, settle, acquire, top; metrics.
  const tpm = throttle(100000, 100000, 60, { block: 60 });
  await limiter.allow([['{u}:tpm', tpm.with({ units: 1500 })], ['{u}:new', slide(5, 60, { shadow: true })]], { maxWait: 0 });
  const settled: (Result | null)[] = await limiter.settle([['{u}:tpm', tpm]], 1500, [1800]);
  const charged: Result = await limiter.charge('{u}:tpm', tpm, 300n);
  const controller = new AbortController();
  try {
    const turn: Result = await limiter.acquire('rl:p', throttle(0, 500, 60), 5000, { deadline: Date.now() + 1000, signal: controller.signal });
    const all: AllowResult = await limiter.acquireAll([['{p}:a', throttle(0, 500, 60)]], 5000);
    void [turn, all];
  } catch (err) {
    if (err instanceof RateLimitedError) console.log(err.retryAfter, err.result.limited);
  }
  const top: TopEntry[] = await limiter.top(10);
  const blockedUntil: number | undefined = s?.blockedUntil;
  const shadowed: ShadowDecision = await limiter.decideShadow([['{u}:new', slide(5, 60, { shadow: true })]]);
  const byGlobal: DecisionMetrics = openTelemetryMetrics();
  const byProvider: DecisionMetrics = openTelemetryMetrics({ meterProvider: new MeterProvider() });
  const byMeter: DecisionMetrics = openTelemetryMetrics({ meter: metrics.getMeter('redis-ratelimit') });
  void [settled, charged, top, blockedUntil, shadowed, byGlobal, byProvider, byMeter];
  const shadowRules = expressRateLimit({ client: new Redis(), metrics: byMeter, limits: [
    { name: 'login', key: 'rl:l:$client', limit: slide(5, 60), block: 900 },
    { name: 'candidate', key: 'rl:c:$client', limit: slide(3, 60), shadow: true },
  ] });
  void shadowRules;
  const mw = expressRateLimit({ client: new Redis(), limits: [{ name: 'default', key: 'rl:$client', limit: throttle(9, 10, 60) }] });
  void [h, index, bound, out, mw, fastifyRateLimit];
}
void main;
