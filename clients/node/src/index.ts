export * from './limits';
export * from './results';
export * from './errors';
export { RateLimiter, bindingIndex, newLeaseId, LeaseLostError } from './limiter';
export type {
  LimiterOptions,
  CallOptions,
  QuantityOptions,
  SlideCallOptions,
  QuotaCallOptions,
  BlockCallOptions,
  ThrottleCallOptions,
  AllowOptions,
  AcquireOptions,
  Entry,
  RateEntry,
  ThrottleEntry,
  Decision,
  ShadowDecision,
  LeaseContext,
  WithLeaseOptions,
} from './limiter';
export { ModuleBackend, registerLuaBackend, detectPrefix, chooseBackend } from './backend';
export type { Backend, BackendChoice, CommandName, LuaBackendFactory } from './backend';
export { executeLua, scriptSource, zoneOffsets, head, TIME_REFUSED, CLOCK_REREAD_MS, LuaBackend } from './lua';
export type { ExecuteOptions, CommandArg, ClockChoice } from './lua';
export { connectionOf, DeadlineError } from './client';
export type { Connection, Route, ReplyOptions, RedisClient } from './client';
export { keyslot, slotGroups } from './slots';
export { rateLimitHeaders } from './headers';
export type { NamedLimit } from './headers';
export { expressRateLimit, fastifyRateLimit, ioredisOptions, isConfigurationError } from './middleware';
export type { MiddlewareOptions, PolicyEntry, RequestValues, RouteLimits } from './middleware';
export { openTelemetryMetrics, METER_NAME, DECISIONS, DURATION, RULE, RESULT, BUCKETS } from './metrics';
export type {
  DecisionMetrics,
  RuleOutcome,
  RequestOutcome,
  MeterLike,
  MeterProviderLike,
  CounterLike,
  HistogramLike,
  OpenTelemetryOptions,
} from './metrics';
