// The limits as small immutable values, one class per kind. Each knows the
// spec words RL.ALLOW and RL.PEEK take for it (with its BLOCK, UNITS and
// SHADOW options), those RL.REFUND and RL.CHARGE take (without them), and
// the command line of its own command (RL.THROTTLE, RL.SLIDE, ...) for a key.

/** A calendar unit of RL.QUOTA. */
export type QuotaUnit = 'MINUTE' | 'HOUR' | 'DAY' | 'WEEK' | 'MONTH' | 'YEAR';

/** A number or the module's decimal text for one (bigint for values past 2^53). */
export type Int = number | bigint;

/** Options every kind takes: `ms` makes its times milliseconds (the module's MS flag). */
export interface TimeOptions {
  readonly ms?: boolean;
}

/**
 * The spec options of RL.ALLOW and RL.PEEK every kind takes: `units` (UNITS
 * n: this limit decides and records `n` units instead of the call's
 * QUANTITY) and `shadow` (SHADOW: decided, never refusing the call).
 */
export interface SpecOptions extends TimeOptions {
  readonly units?: Int;
  readonly shadow?: boolean;
}

/**
 * The options of the rate kinds (every kind but LEASE): `block` (BLOCK b, in
 * the limit's unit): a refusal blocks the key for `b`.
 */
export interface RateOptions extends SpecOptions {
  readonly block?: Int;
}

function text(n: Int): string {
  return typeof n === 'bigint' ? n.toString() : String(n);
}

abstract class LimitBase {
  /** Times in milliseconds (MS) instead of seconds. */
  readonly ms: boolean;
  /** BLOCK b: how long a refusal blocks the key (the limit's unit); undefined: no block. */
  readonly block: Int | undefined;
  /** UNITS n: the units this limit decides with in RL.ALLOW/RL.PEEK; undefined: the call's QUANTITY. */
  readonly units: Int | undefined;
  /** SHADOW: in RL.ALLOW/RL.PEEK, decided but never refusing the call. */
  readonly shadow: boolean;

  protected constructor(options: RateOptions) {
    this.ms = options.ms === true;
    this.block = options.block;
    this.units = options.units;
    this.shadow = options.shadow === true;
  }

  /**
   * The spec as RL.REFUND and RL.CHARGE take it: the kind's name, its
   * numbers and options, without BLOCK, UNITS and SHADOW.
   */
  abstract baseSpec(): string[];

  /**
   * The spec as RL.ALLOW and RL.PEEK take it: baseSpec(), then
   * `[BLOCK b] [UNITS n] [SHADOW]`.
   */
  spec(): string[] {
    return [...this.baseSpec(), ...this.blockOption(), ...this.specOptions()];
  }

  /** `[BLOCK b]`: the option of the kind's own command, and of its spec. */
  blockOption(): string[] {
    return this.block === undefined ? [] : ['BLOCK', text(this.block)];
  }

  /** `[UNITS n] [SHADOW]`: spec options only (a single command answers them with an error). */
  specOptions(): string[] {
    const words = this.units === undefined ? [] : ['UNITS', text(this.units)];
    if (this.shadow) words.push('SHADOW');
    return words;
  }

  /** The options this limit was made with. */
  abstract get options(): RateOptions;

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

// A time of `name` in seconds as milliseconds (bigint: exact past 2^53).
function thousand(value: Int, name: string): bigint {
  if (typeof value === 'bigint') return value * 1000n;
  if (!Number.isInteger(value)) throw new TypeError(`${name} ${value} is not a whole number of seconds, to convert to ms`);
  return BigInt(value) * 1000n;
}

function msOf(value: Int | undefined, name: string): bigint | undefined {
  return value === undefined ? undefined : thousand(value, name);
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

  constructor(maxBurst: Int, count: Int, period: Int, options: RateOptions = {}) {
    super(options);
    this.maxBurst = maxBurst;
    this.count = count;
    this.period = period;
    Object.freeze(this);
  }

  get command(): 'THROTTLE' {
    return 'THROTTLE';
  }

  baseSpec(): string[] {
    return ['THROTTLE', text(this.maxBurst), text(this.count), text(this.period)];
  }

  get options(): RateOptions {
    return { ms: this.ms, block: this.block, units: this.units, shadow: this.shadow };
  }

  /** The same limit with `changes` to its options. */
  with(changes: RateOptions): Throttle {
    return new Throttle(this.maxBurst, this.count, this.period, { ...this.options, ...changes });
  }

  /** The same limit with its times in milliseconds (MS): itself when they are. */
  inMs(): Throttle {
    if (this.ms) return this;
    return new Throttle(this.maxBurst, this.count, thousand(this.period, 'period'), {
      ...this.options,
      ms: true,
      block: msOf(this.block, 'block'),
    });
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
export interface SlideOptions extends RateOptions {
  readonly precision?: Int;
}

/** The exact sliding log (RL.SLIDE): at most `limit` in any `window`. */
export class Slide extends LimitBase {
  readonly kind = 'slide' as const;
  readonly limit: Int;
  readonly windowLength: Int;
  readonly precision: Int | undefined;

  constructor(limit: Int, window: Int, options: SlideOptions = {}) {
    super(options);
    this.limit = limit;
    this.windowLength = window;
    this.precision = options.precision;
    Object.freeze(this);
  }

  get command(): 'SLIDE' {
    return 'SLIDE';
  }

  baseSpec(): string[] {
    return ['SLIDE', ...this.commandArgs(), ...this.commandOptions()];
  }

  get options(): SlideOptions {
    return { ms: this.ms, precision: this.precision, block: this.block, units: this.units, shadow: this.shadow };
  }

  /** The same limit with `changes` to its options. */
  with(changes: SlideOptions): Slide {
    return new Slide(this.limit, this.windowLength, { ...this.options, ...changes });
  }

  /** The same limit with its times in milliseconds (MS): itself when they are. */
  inMs(): Slide {
    if (this.ms) return this;
    return new Slide(this.limit, thousand(this.windowLength, 'window'), {
      ...this.options,
      ms: true,
      precision: msOf(this.precision, 'precision'),
      block: msOf(this.block, 'block'),
    });
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

  constructor(limit: Int, window: Int, slices: Int, options: RateOptions = {}) {
    super(options);
    this.limit = limit;
    this.windowLength = window;
    this.slices = slices;
    Object.freeze(this);
  }

  get command(): 'SLICE' {
    return 'SLICE';
  }

  baseSpec(): string[] {
    return ['SLICE', ...this.commandArgs()];
  }

  get options(): RateOptions {
    return { ms: this.ms, block: this.block, units: this.units, shadow: this.shadow };
  }

  /** The same limit with `changes` to its options. */
  with(changes: RateOptions): Slice {
    return new Slice(this.limit, this.windowLength, this.slices, { ...this.options, ...changes });
  }

  /** The same limit with its times in milliseconds (MS): itself when they are. */
  inMs(): Slice {
    if (this.ms) return this;
    return new Slice(this.limit, thousand(this.windowLength, 'window'), this.slices, {
      ...this.options,
      ms: true,
      block: msOf(this.block, 'block'),
    });
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

  constructor(limit: Int, ttl: Int, options: SpecOptions = {}) {
    super(options);
    this.limit = limit;
    this.ttl = ttl;
    Object.freeze(this);
  }

  get command(): 'LEASE' {
    return 'LEASE';
  }

  baseSpec(): string[] {
    return ['LEASE', text(this.limit), text(this.ttl)];
  }

  get options(): SpecOptions {
    return { ms: this.ms, units: this.units, shadow: this.shadow };
  }

  /** The same limit with `changes` to its options. */
  with(changes: SpecOptions): Lease {
    return new Lease(this.limit, this.ttl, { ...this.options, ...changes });
  }

  /** The same limit with its times in milliseconds (MS): itself when they are. */
  inMs(): Lease {
    if (this.ms) return this;
    return new Lease(this.limit, thousand(this.ttl, 'ttl'), { ...this.options, ms: true });
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
export interface QuotaOptions extends RateOptions {
  readonly tz?: string;
}

/** A calendar quota (RL.QUOTA): at most `limit` per `unit` on the clock of `tz`. */
export class Quota extends LimitBase {
  readonly kind = 'quota' as const;
  readonly limit: Int;
  readonly unit: QuotaUnit;
  readonly tz: string | undefined;

  constructor(limit: Int, unit: QuotaUnit, options: QuotaOptions = {}) {
    super(options);
    this.limit = limit;
    this.unit = unit;
    this.tz = options.tz;
    Object.freeze(this);
  }

  get command(): 'QUOTA' {
    return 'QUOTA';
  }

  baseSpec(): string[] {
    const words = ['QUOTA', text(this.limit), this.unit];
    if (this.tz !== undefined) words.push('TZ', this.tz);
    return words;
  }

  get options(): QuotaOptions {
    return { ms: this.ms, tz: this.tz, block: this.block, units: this.units, shadow: this.shadow };
  }

  /** The same limit with `changes` to its options. */
  with(changes: QuotaOptions): Quota {
    return new Quota(this.limit, this.unit, { ...this.options, ...changes });
  }

  /** The same limit with its times in milliseconds (MS): itself when they are. */
  inMs(): Quota {
    if (this.ms) return this;
    return new Quota(this.limit, this.unit, { ...this.options, ms: true, block: msOf(this.block, 'block') });
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
export function throttle(maxBurst: Int, count: Int, period: Int, options?: RateOptions): Throttle {
  return new Throttle(maxBurst, count, period, options);
}

/** RL.SLIDE's limit: at most `limit` in any `window`. */
export function slide(limit: Int, window: Int, options?: SlideOptions): Slide {
  return new Slide(limit, window, options);
}

/** RL.SLICE's limit: at most `limit` per `window`, counted in `slices` slices. */
export function slice(limit: Int, window: Int, slices: Int, options?: RateOptions): Slice {
  return new Slice(limit, window, slices, options);
}

/** RL.LEASE's limit: at most `limit` at once, each lease lasting `ttl`. */
export function lease(limit: Int, ttl: Int, options?: SpecOptions): Lease {
  return new Lease(limit, ttl, options);
}

/** RL.QUOTA's limit: at most `limit` per calendar `unit`. */
export function quota(limit: Int, unit: QuotaUnit, options?: QuotaOptions): Quota {
  return new Quota(limit, unit, options);
}

export function isLimit(value: unknown): value is Limit {
  return value instanceof LimitBase;
}
