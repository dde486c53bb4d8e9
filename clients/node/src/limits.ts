// The limits as small immutable values, one class per kind. Each knows the
// spec words RL.ALLOW, RL.PEEK and RL.REFUND take for it, and the command
// line of its own command (RL.THROTTLE, RL.SLIDE, ...) for a key.

/** A calendar unit of RL.QUOTA. */
export type QuotaUnit = 'MINUTE' | 'HOUR' | 'DAY' | 'WEEK' | 'MONTH' | 'YEAR';

/** A number or the module's decimal text for one (bigint for values past 2^53). */
export type Int = number | bigint;

/** Options every kind takes: `ms` makes its times milliseconds (the module's MS flag). */
export interface TimeOptions {
  readonly ms?: boolean;
}

function text(n: Int): string {
  return typeof n === 'bigint' ? n.toString() : String(n);
}

abstract class LimitBase {
  /** Times in milliseconds (MS) instead of seconds. */
  readonly ms: boolean;

  protected constructor(ms: boolean | undefined) {
    this.ms = ms === true;
  }

  /** The spec as RL.ALLOW takes it: the kind's name and its numbers. */
  abstract spec(): string[];

  /** The module's command for this kind alone. */
  abstract get command(): 'THROTTLE' | 'SLIDE' | 'SLICE' | 'LEASE' | 'QUOTA';

  /**
   * The window of the `RateLimit-Policy` field (`w`), in seconds: the
   * window for SLIDE and SLICE, the time the capacity takes to refill for
   * THROTTLE; undefined for LEASE and QUOTA, which have none.
   */
  abstract get window(): number | undefined;

  /** The numbers of the kind's own command after the key, before quantity. */
  abstract commandArgs(): string[];

  /** The options of the kind's own command after quantity and MS (PRECISION d, TZ zone). */
  commandOptions(): string[] {
    return [];
  }
}

function seconds(value: Int, ms: boolean): number {
  const n = Number(value);
  return ms ? Math.max(1, Math.ceil(n / 1000)) : n;
}

/** GCRA (RL.THROTTLE): `count` per `period`, in bursts of up to `maxBurst + 1`. */
export class Throttle extends LimitBase {
  readonly kind = 'throttle' as const;
  readonly maxBurst: Int;
  readonly count: Int;
  readonly period: Int;

  constructor(maxBurst: Int, count: Int, period: Int, options: TimeOptions = {}) {
    super(options.ms);
    this.maxBurst = maxBurst;
    this.count = count;
    this.period = period;
    Object.freeze(this);
  }

  get command(): 'THROTTLE' {
    return 'THROTTLE';
  }

  spec(): string[] {
    return ['THROTTLE', text(this.maxBurst), text(this.count), text(this.period)];
  }

  commandArgs(): string[] {
    return [text(this.maxBurst), text(this.count), text(this.period)];
  }

  // capacity x period / count, rounded up, in seconds; in BigInt since the
  // product can pass 2^53.
  get window(): number {
    const burst = BigInt(this.maxBurst) + 1n;
    const count = BigInt(this.count);
    if (count <= 0n) return 1;
    let period = BigInt(this.period);
    let divisor = count;
    if (this.ms) divisor *= 1000n;
    const w = (burst * period + divisor - 1n) / divisor;
    period = w > 1n ? w : 1n;
    return Number(period);
  }
}

/** Options of RL.SLIDE: `precision` is its PRECISION d (in the limit's unit). */
export interface SlideOptions extends TimeOptions {
  readonly precision?: Int;
}

/** The exact sliding log (RL.SLIDE): at most `limit` in any `window`. */
export class Slide extends LimitBase {
  readonly kind = 'slide' as const;
  readonly limit: Int;
  readonly windowLength: Int;
  readonly precision: Int | undefined;

  constructor(limit: Int, window: Int, options: SlideOptions = {}) {
    super(options.ms);
    this.limit = limit;
    this.windowLength = window;
    this.precision = options.precision;
    Object.freeze(this);
  }

  get command(): 'SLIDE' {
    return 'SLIDE';
  }

  spec(): string[] {
    return ['SLIDE', ...this.commandArgs(), ...this.commandOptions()];
  }

  commandArgs(): string[] {
    return [text(this.limit), text(this.windowLength)];
  }

  override commandOptions(): string[] {
    return this.precision === undefined ? [] : ['PRECISION', text(this.precision)];
  }

  get window(): number {
    return seconds(this.windowLength, this.ms);
  }
}

/** The sliding window of time slices (RL.SLICE). */
export class Slice extends LimitBase {
  readonly kind = 'slice' as const;
  readonly limit: Int;
  readonly windowLength: Int;
  readonly slices: Int;

  constructor(limit: Int, window: Int, slices: Int, options: TimeOptions = {}) {
    super(options.ms);
    this.limit = limit;
    this.windowLength = window;
    this.slices = slices;
    Object.freeze(this);
  }

  get command(): 'SLICE' {
    return 'SLICE';
  }

  spec(): string[] {
    return ['SLICE', ...this.commandArgs()];
  }

  commandArgs(): string[] {
    return [text(this.limit), text(this.windowLength), text(this.slices)];
  }

  get window(): number {
    return seconds(this.windowLength, this.ms);
  }
}

/** A concurrency limit (RL.LEASE): at most `limit` held at once, leases of `ttl`. */
export class Lease extends LimitBase {
  readonly kind = 'lease' as const;
  readonly limit: Int;
  readonly ttl: Int;

  constructor(limit: Int, ttl: Int, options: TimeOptions = {}) {
    super(options.ms);
    this.limit = limit;
    this.ttl = ttl;
    Object.freeze(this);
  }

  get command(): 'LEASE' {
    return 'LEASE';
  }

  spec(): string[] {
    return ['LEASE', text(this.limit), text(this.ttl)];
  }

  commandArgs(): string[] {
    return [text(this.limit), text(this.ttl)];
  }

  get window(): undefined {
    return undefined;
  }

  /** The lease's ttl in milliseconds. */
  get ttlMs(): number {
    return this.ms ? Number(this.ttl) : Number(this.ttl) * 1000;
  }
}

/** Options of RL.QUOTA: `tz` is its TZ zone (an IANA name or an offset such as +05:30). */
export interface QuotaOptions extends TimeOptions {
  readonly tz?: string;
}

/** A calendar quota (RL.QUOTA): at most `limit` per `unit` on the clock of `tz`. */
export class Quota extends LimitBase {
  readonly kind = 'quota' as const;
  readonly limit: Int;
  readonly unit: QuotaUnit;
  readonly tz: string | undefined;

  constructor(limit: Int, unit: QuotaUnit, options: QuotaOptions = {}) {
    super(options.ms);
    this.limit = limit;
    this.unit = unit;
    this.tz = options.tz;
    Object.freeze(this);
  }

  get command(): 'QUOTA' {
    return 'QUOTA';
  }

  spec(): string[] {
    const words = ['QUOTA', text(this.limit), this.unit];
    if (this.tz !== undefined) words.push('TZ', this.tz);
    return words;
  }

  commandArgs(): string[] {
    return [text(this.limit), this.unit];
  }

  override commandOptions(): string[] {
    return this.tz === undefined ? [] : ['TZ', this.tz];
  }

  get window(): undefined {
    return undefined;
  }
}

/** Any limit. */
export type Limit = Throttle | Slide | Slice | Lease | Quota;
/** A limit that takes units back (RL.REFUND): every kind but LEASE. */
export type RateLimit = Throttle | Slide | Slice | Quota;

/** RL.THROTTLE's limit: `count` per `period`, bursts of `maxBurst + 1`. */
export function throttle(maxBurst: Int, count: Int, period: Int, options?: TimeOptions): Throttle {
  return new Throttle(maxBurst, count, period, options);
}

/** RL.SLIDE's limit: at most `limit` in any `window`. */
export function slide(limit: Int, window: Int, options?: SlideOptions): Slide {
  return new Slide(limit, window, options);
}

/** RL.SLICE's limit: at most `limit` per `window`, counted in `slices` slices. */
export function slice(limit: Int, window: Int, slices: Int, options?: TimeOptions): Slice {
  return new Slice(limit, window, slices, options);
}

/** RL.LEASE's limit: at most `limit` at once, each lease lasting `ttl`. */
export function lease(limit: Int, ttl: Int, options?: TimeOptions): Lease {
  return new Lease(limit, ttl, options);
}

/** RL.QUOTA's limit: at most `limit` per calendar `unit`. */
export function quota(limit: Int, unit: QuotaUnit, options?: QuotaOptions): Quota {
  return new Quota(limit, unit, options);
}

export function isLimit(value: unknown): value is Limit {
  return value instanceof LimitBase;
}
