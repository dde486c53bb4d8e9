// RateLimiter: one method per command, with the module's parameter names,
// resolving to typed results; the limits as values for RL.ALLOW, RL.PEEK,
// RL.REFUND and RL.CHARGE; settling estimates; waiting for a turn (acquire,
// over MAXWAIT); a lease helper; several limits across hash slots.
//
// Bad arguments: nothing is checked here. Every argument goes to the
// backend as the module's text (numbers in decimal), and the module's
// `ERR ...` reply comes back as an ArgumentError naming the argument (the
// Lua backend answers the same texts). The one exception is the shape of a
// JavaScript call that has no command line: RL.ALLOW's limits disagreeing
// on `ms` (the module's MS is one flag for the whole call), settle's
// amounts not integers or not one per limit, acquire's seconds not whole
// (converted to ms) throw a TypeError before sending.

import { randomBytes } from 'node:crypto';
import { type Backend, type BackendChoice, type CommandName, chooseBackend } from './backend';
import { type Connection, type RedisClient, type Route, connectionOf } from './client';
import { LeaseRefusedError, RateLimitError, RateLimitedError, translate } from './errors';
import type { Int, Lease, Limit, QuotaUnit, RateLimit, Throttle } from './limits';
import {
  type AllowResult,
  type KeyState,
  type Result,
  type TopEntry,
  toAllowResult,
  toKeyState,
  toResult,
  toTop,
} from './results';
import { keyslot, slotGroups } from './slots';

export interface LimiterOptions {
  /** `auto` (default): the module when loaded, else the Lua backend; or force one. */
  readonly backend?: BackendChoice;
  /** The module's command prefix, skipping its detection (the module backend only). */
  readonly prefix?: string;
}

/** Options of every call. */
export interface CallOptions {
  /** A Date.now() instant: the call sends nothing after it and fails at it. */
  readonly deadline?: number;
}
export interface QuantityOptions extends CallOptions {
  /** What this request costs (default 1; 0 peeks). */
  readonly quantity?: Int;
  /** Times in milliseconds (MS), in the arguments and the reply. */
  readonly ms?: boolean;
}
export interface BlockCallOptions extends QuantityOptions {
  /** BLOCK b: a refusal blocks the key for `b` (the call's unit). */
  readonly block?: Int;
}
export interface ThrottleCallOptions extends BlockCallOptions {
  /** MAXWAIT w: a request allowed within `w` (the call's unit) is granted its turn (retryAfter = its wait). */
  readonly maxWait?: Int;
}
export interface SlideCallOptions extends BlockCallOptions {
  readonly precision?: Int;
}
export interface QuotaCallOptions extends BlockCallOptions {
  readonly tz?: string;
}
export interface AllowOptions extends CallOptions {
  /** QUANTITY q (default 1). */
  readonly quantity?: Int;
  /** ID lease_id: the lease of the LEASE limits. */
  readonly id?: string;
  /** MAXWAIT w (every limit THROTTLE): granted when every limit's wait is at most `w`. */
  readonly maxWait?: Int;
}
/** Options of acquire and acquireAll. */
export interface AcquireOptions extends CallOptions {
  /** What this request costs (default 1). */
  readonly quantity?: Int;
  /** Aborting it while waiting for the turn gives the turn back and rejects with its reason. */
  readonly signal?: AbortSignal;
}

/** A limit on a key: `[key, limit]` or `{ key, limit }`. */
export type Entry = readonly [key: string, limit: Limit] | { readonly key: string; readonly limit: Limit };
/** A rate limit (not LEASE) on a key, as settle takes it. */
export type RateEntry = readonly [key: string, limit: RateLimit] | { readonly key: string; readonly limit: RateLimit };
/** A THROTTLE limit on a key, as acquireAll takes it. */
export type ThrottleEntry = readonly [key: string, limit: Throttle] | { readonly key: string; readonly limit: Throttle };

/** What `decideShadow` answers: each limit's own result, and which recorded. */
export interface ShadowDecision {
  /** Each limit's result, as its RL.ALLOW alone answered it. */
  readonly results: readonly Result[];
  /** 0-based positions of the limits that recorded the request (those that allowed). */
  readonly taken: readonly number[];
}

/** A decision over several limits, possibly across slots (RateLimiter.decide). */
export interface Decision extends AllowResult {
  /**
   * 0-based positions of the limits that recorded the request: when
   * allowed, all but the SHADOW limits that would have refused; none when limited.
   */
  readonly taken: readonly number[];
}

function str(n: Int): string {
  return typeof n === 'bigint' ? n.toString() : String(n);
}

function entry(e: Entry): { key: string; limit: Limit } {
  return Array.isArray(e) ? { key: e[0] as string, limit: e[1] as Limit } : (e as { key: string; limit: Limit });
}

/** A fresh lease id: 16 random bytes in hex. */
export function newLeaseId(): string {
  return randomBytes(16).toString('hex');
}

/**
 * The binding limit among `results`, as RL.ALLOW picks it (from the rounded
 * fields): when any is limited, the limited one with the longest retryAfter
 * (-1, never, the longest); otherwise the least remaining, then the longest
 * resetAfter; ties to the lower index. With `enforced`, among the limits it
 * marks true only (SHADOW limits are never binding). Returns the 0-based
 * position (an AllowResult's `index` is this plus one), -1 when none counts.
 */
export function bindingIndex(results: readonly Result[], enforced?: readonly boolean[]): number {
  const counts = (i: number): boolean => enforced === undefined || enforced[i] === true;
  const anyLimited = results.some((r, i) => counts(i) && r.limited);
  const retry = (r: Result): number => (r.retryAfter < 0 ? Infinity : r.retryAfter);
  let best = -1;
  results.forEach((r, i) => {
    if (!counts(i) || (anyLimited && !r.limited)) return;
    const b = results[best];
    const better =
      b === undefined ||
      (anyLimited
        ? retry(r) > retry(b)
        : r.remaining < b.remaining || (r.remaining === b.remaining && r.resetAfter > b.resetAfter));
    if (better) best = i;
  });
  return best;
}

// MAXWAIT's ms: the wait asked, but no longer than the deadline leaves
// (at least 0; a deadline already passed fails the call before sending).
function waitOf(maxWait: number, deadline: number | undefined): number {
  if (deadline === undefined) return maxWait;
  return Math.max(0, Math.min(maxWait, Math.floor(deadline - Date.now())));
}

// Resolves after `ms` on a timer; rejects with the signal's reason when it aborts first.
function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (): void => {
      signal?.removeEventListener('abort', abort);
      resolve();
    };
    const timer = setTimeout(done, ms);
    const abort = (): void => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', abort, { once: true });
  });
}

// Waits a grant's turn (its retryAfter, ms); a turn after the deadline, or
// a wait aborted, gives the turn back first.
async function turn(key: string, r: Result, options: AcquireOptions, giveBack: () => Promise<unknown>): Promise<void> {
  if (options.deadline !== undefined && Date.now() + r.retryAfter > options.deadline) {
    await giveBack();
    throw new RateLimitedError(key, r, ' (its turn comes after the deadline)');
  }
  if (r.retryAfter <= 0 && !options.signal?.aborted) return;
  try {
    options.signal?.throwIfAborted();
    await sleep(r.retryAfter, options.signal);
  } catch (err) {
    await giveBack();
    throw err;
  }
}

/** What `withLease` hands the function it runs. */
export interface LeaseContext {
  /** The lease's id. */
  readonly id: string;
  /** The grant's result. */
  readonly result: Result;
  /** Aborted when the lease is lost (a renewal refused) or the caller's signal aborts. */
  readonly signal: AbortSignal;
}
export interface WithLeaseOptions {
  /** The lease id (default: a fresh random one). */
  readonly id?: string;
  readonly quantity?: Int;
  /** Renew every `renewEvery` of the ttl (default 1/3). */
  readonly renewEvery?: number;
  /** Aborting it releases the lease at once and rejects with its reason. */
  readonly signal?: AbortSignal;
}

/** The error a lost lease aborts the function's signal with. */
export class LeaseLostError extends RateLimitError {}

// The backends chosen per client (its Connection), by choice and prefix.
const detections = new WeakMap<Connection, Map<string, Promise<Backend>>>();

export class RateLimiter {
  readonly connection: Connection;
  private readonly choice: BackendChoice;
  private readonly prefix: string | undefined;
  private chosen: Promise<Backend> | undefined;

  constructor(client: RedisClient | Connection, options: LimiterOptions = {}) {
    this.connection = connectionOf(client);
    this.choice = options.backend ?? 'auto';
    this.prefix = options.prefix;
  }

  /**
   * The backend, chosen on the first call: one detection per client (shared
   * by every limiter on it with the same choice), retried after a failed one.
   */
  backend(): Promise<Backend> {
    if (this.chosen) return this.chosen;
    let byChoice = detections.get(this.connection);
    if (!byChoice) detections.set(this.connection, (byChoice = new Map()));
    const how = `${this.choice} ${this.prefix ?? ''}`;
    let chosen = byChoice.get(how);
    if (!chosen) {
      chosen = chooseBackend(this.connection, this.choice, this.prefix);
      byChoice.set(how, chosen);
      chosen.then(
        (backend) => (this.chosen = Promise.resolve(backend)),
        () => byChoice.delete(how),
      );
    }
    return chosen;
  }

  /** A module command line through the backend; errors as this package's. */
  async call(name: CommandName, args: readonly string[], route: Route = {}): Promise<unknown> {
    try {
      const backend = await this.backend();
      return await backend.call(name, args, route);
    } catch (err) {
      throw translate(err);
    }
  }

  private route(key: string, options: CallOptions | undefined): Route {
    return { slot: keyslot(key), key, deadline: options?.deadline };
  }

  private async single(
    name: CommandName,
    key: string,
    numbers: string[],
    options: BlockCallOptions | undefined,
    extra: string[] = [],
  ): Promise<Result> {
    const args = [key, ...numbers];
    if (options?.quantity !== undefined) args.push(str(options.quantity));
    if (options?.ms) args.push('MS');
    args.push(...extra);
    if (options?.block !== undefined) args.push('BLOCK', str(options.block));
    return toResult(await this.call(name, args, this.route(key, options)));
  }

  /** RL.THROTTLE key max_burst count period [quantity] [MS] [MAXWAIT w] [BLOCK b]. */
  throttle(key: string, maxBurst: Int, count: Int, period: Int, options?: ThrottleCallOptions): Promise<Result> {
    const extra = options?.maxWait === undefined ? [] : ['MAXWAIT', str(options.maxWait)];
    return this.single('THROTTLE', key, [str(maxBurst), str(count), str(period)], options, extra);
  }

  /** RL.SLIDE key limit window [quantity] [MS] [PRECISION d] [BLOCK b]. */
  slide(key: string, limit: Int, window: Int, options?: SlideCallOptions): Promise<Result> {
    const extra = options?.precision === undefined ? [] : ['PRECISION', str(options.precision)];
    return this.single('SLIDE', key, [str(limit), str(window)], options, extra);
  }

  /** RL.SLICE key limit window slices [quantity] [MS] [BLOCK b]. */
  slice(key: string, limit: Int, window: Int, slices: Int, options?: BlockCallOptions): Promise<Result> {
    return this.single('SLICE', key, [str(limit), str(window), str(slices)], options);
  }

  /** RL.LEASE key limit ttl lease_id [quantity] [MS]: takes or renews the lease. */
  lease(key: string, limit: Int, ttl: Int, leaseId: string, options?: QuantityOptions): Promise<Result> {
    return this.single('LEASE', key, [str(limit), str(ttl), leaseId], options);
  }

  /** RL.RELEASE key lease_id: true when the lease was held. */
  async release(key: string, leaseId: string, options?: CallOptions): Promise<boolean> {
    return Number(await this.call('RELEASE', [key, leaseId], this.route(key, options))) === 1;
  }

  /** RL.QUOTA key limit unit [quantity] [TZ zone] [MS] [BLOCK b]. */
  quota(key: string, limit: Int, unit: QuotaUnit, options?: QuotaCallOptions): Promise<Result> {
    const args = [key, str(limit), unit];
    if (options?.quantity !== undefined) args.push(str(options.quantity));
    if (options?.tz !== undefined) args.push('TZ', options.tz);
    if (options?.ms) args.push('MS');
    if (options?.block !== undefined) args.push('BLOCK', str(options.block));
    return this.call('QUOTA', args, this.route(key, options)).then(toResult);
  }

  /**
   * One limit alone, by its kind's command (RL.THROTTLE for a throttle
   * limit, ...), with its BLOCK. A lease limit needs `id`. A limit's
   * `units` and `shadow` are spec options: sent as given, the module
   * answers its `unknown argument` error for them.
   */
  take(key: string, limit: Limit, options: { quantity?: Int; id?: string } & CallOptions = {}): Promise<Result> {
    const args = [key, ...limit.commandArgs()];
    if (limit.kind === 'lease') args.push(options.id ?? '');
    if (options.quantity !== undefined) args.push(str(options.quantity));
    if (limit.ms) args.push('MS');
    args.push(...limit.commandOptions(), ...limit.blockOption(), ...limit.specOptions());
    return this.call(limit.command, args, this.route(key, options)).then(toResult);
  }

  private several(entries: readonly Entry[], options: AllowOptions | undefined): { args: string[]; route: Route } {
    const items = entries.map(entry);
    const ms = items.length > 0 && items[0]!.limit.ms;
    if (items.some((e) => e.limit.ms !== ms)) {
      throw new TypeError('the limits of one RL.ALLOW or RL.PEEK must all have ms, or none (MS is one flag)');
    }
    const args = [String(items.length), ...items.map((e) => e.key)];
    for (const e of items) args.push(...e.limit.spec());
    if (options?.quantity !== undefined) args.push('QUANTITY', str(options.quantity));
    if (ms) args.push('MS');
    if (options?.maxWait !== undefined) args.push('MAXWAIT', str(options.maxWait));
    if (options?.id !== undefined) args.push('ID', options.id);
    const first = items[0]?.key;
    return { args, route: first === undefined ? { deadline: options?.deadline } : this.route(first, options) };
  }

  /** RL.ALLOW: every limit at once, all or nothing (its keys in one slot on a cluster). */
  async allow(entries: readonly Entry[], options?: AllowOptions): Promise<AllowResult> {
    const { args, route } = this.several(entries, options);
    return toAllowResult(await this.call('ALLOW', args, route));
  }

  /** RL.PEEK: what RL.ALLOW would answer now, changing nothing. */
  async peek(entries: readonly Entry[], options?: AllowOptions): Promise<AllowResult> {
    const { args, route } = this.several(entries, options);
    return toAllowResult(await this.call('PEEK', args, route));
  }

  /** RL.INSPECT key: what the key holds, null when there is no key. */
  async inspect(key: string, options?: CallOptions): Promise<KeyState | null> {
    return toKeyState(await this.call('INSPECT', [key], this.route(key, options)));
  }

  /** RL.REFUND key spec quantity [MS]: gives back up to `quantity` units (the spec without BLOCK, UNITS, SHADOW). */
  async refund(key: string, limit: RateLimit, quantity: Int, options?: CallOptions): Promise<Result> {
    const args = [key, ...limit.baseSpec(), str(quantity)];
    if (limit.ms) args.push('MS');
    return toResult(await this.call('REFUND', args, this.route(key, options)));
  }

  /**
   * RL.CHARGE key spec quantity [MS]: records `quantity` units whatever the
   * limit says (a cost known afterwards); a key taken over its limit is in
   * debt, and refuses until it is paid back (the spec without BLOCK, UNITS, SHADOW).
   */
  async charge(key: string, limit: RateLimit, quantity: Int, options?: CallOptions): Promise<Result> {
    const args = [key, ...limit.baseSpec(), str(quantity)];
    if (limit.ms) args.push('MS');
    return toResult(await this.call('CHARGE', args, this.route(key, options)));
  }

  /**
   * Settles estimates with what was used: per limit, RL.REFUND of
   * `taken - actual`, or RL.CHARGE of `actual - taken`; nothing when they
   * are equal (that limit's result is null). `taken` and `actual` are one
   * integer for every limit or one per limit. Every command is sent at once,
   * before any reply is read (one round trip: pipelined on the connection,
   * or to each key's node on a cluster). A difference needs integers: a
   * number that is not one throws a TypeError before sending.
   */
  async settle(
    entries: readonly RateEntry[],
    taken: Int | readonly Int[],
    actual: Int | readonly Int[],
    options?: CallOptions,
  ): Promise<(Result | null)[]> {
    const items = entries.map(entry) as { key: string; limit: RateLimit }[];
    const per = (value: Int | readonly Int[], name: string): bigint[] => {
      const values = Array.isArray(value) ? (value as readonly Int[]) : items.map(() => value as Int);
      if (values.length !== items.length) throw new TypeError(`settle: ${values.length} ${name} for ${items.length} limits`);
      return values.map((v) => {
        if (typeof v === 'bigint') return v;
        if (!Number.isInteger(v)) throw new TypeError(`settle: ${name} ${String(v)} is not an integer`);
        return BigInt(v);
      });
    };
    const t = per(taken, 'taken');
    const a = per(actual, 'actual');
    return Promise.all(
      items.map(({ key, limit }, i) => {
        const d = a[i]! - t[i]!;
        if (d === 0n) return null;
        return d > 0n ? this.charge(key, limit, d, options) : this.refund(key, limit, -d, options);
      }),
    );
  }

  /**
   * Waits for a turn of `limit` on `key`, at most `maxWait` ms (and never
   * past `options.deadline`): RL.THROTTLE with the limit in ms (MS) and
   * `MAXWAIT min(maxWait, deadline - now)`. Granted: waits the turn's
   * retryAfter ms on a timer, then resolves to the grant's result (times in
   * ms). Refused (the wait would be longer, the key is blocked, or it can
   * never fit): rejects with RateLimitedError carrying retryAfter (ms; -1:
   * never). A grant whose turn comes after the deadline (the round trip's
   * time), or whose wait `signal` aborts, gives its turn back (RL.REFUND):
   * the first rejects with RateLimitedError, the second with the signal's reason.
   */
  async acquire(key: string, limit: Throttle, maxWait: number, options: AcquireOptions = {}): Promise<Result> {
    options.signal?.throwIfAborted();
    const inMs = limit.inMs();
    const args = [key, ...inMs.commandArgs()];
    if (options.quantity !== undefined) args.push(str(options.quantity));
    args.push('MS', 'MAXWAIT', str(waitOf(maxWait, options.deadline)), ...inMs.blockOption(), ...inMs.specOptions());
    const r = toResult(await this.call('THROTTLE', args, this.route(key, options)));
    if (r.limited) throw new RateLimitedError(key, r);
    const giveBack = (): Promise<unknown> => this.refund(key, inMs, options.quantity ?? 1).catch(() => undefined);
    await turn(key, r, options, giveBack);
    return r;
  }

  /**
   * acquire over several THROTTLE limits in one RL.ALLOW (MS, MAXWAIT): a
   * turn of every limit at once, granted when each limit's wait is at most
   * the wait asked; then waits the longest (the reply's retryAfter).
   */
  async acquireAll(entries: readonly ThrottleEntry[], maxWait: number, options: AcquireOptions = {}): Promise<AllowResult> {
    options.signal?.throwIfAborted();
    const items = entries.map((e) => {
      const { key, limit } = entry(e as Entry);
      return { key, limit: (limit as Throttle).inMs() };
    });
    const wait = waitOf(maxWait, options.deadline);
    const r = await this.allow(items, { quantity: options.quantity, deadline: options.deadline, maxWait: wait });
    const first = items[0]?.key ?? '';
    if (r.limited) throw new RateLimitedError(items[r.index - 1]?.key ?? first, r);
    const giveBack = (): Promise<unknown> =>
      this.undo(items, items.map((_, i) => i), options.quantity ?? 1).catch(() => undefined);
    await turn(items[r.index - 1]?.key ?? first, r, options, giveBack);
    return r;
  }

  /**
   * RL.TOP [COUNT n]: the keys refused most often recently on the node that
   * answers (on a cluster, ask each master: `new RateLimiter(node).top()`).
   * The Lua backend keeps no such summary: its script answers an error
   * (ArgumentError).
   */
  async top(count?: Int, options?: CallOptions): Promise<TopEntry[]> {
    const args = count === undefined ? [] : ['COUNT', str(count)];
    return toTop(await this.call('TOP', args, { deadline: options?.deadline }));
  }

  /**
   * RL.ALLOW over keys of any slots: with `groupBySlot`, one RL.ALLOW per
   * hash slot in the order of the limits; when a group refuses, what the
   * earlier groups took is given back (RL.REFUND, RL.RELEASE) and the later
   * groups are peeked at (RL.PEEK), so that the binding limit is the one a
   * single call would name. Without it, one RL.ALLOW. SHADOW limits are
   * never binding; a group of SHADOW limits only (beside enforced limits in
   * other groups) is decided as decideShadow decides.
   */
  async decide(
    entries: readonly Entry[],
    options: AllowOptions & { groupBySlot?: boolean } = {},
  ): Promise<Decision> {
    const items = entries.map(entry);
    const keys = items.map((e) => e.key);
    const groups = options.groupBySlot ? slotGroups(keys) : [keys.map((_, i) => i)];
    const results: Result[] = new Array<Result>(items.length);
    const taken: number[] = [];
    const enforced = items.map((e) => !e.limit.shadow);
    const leased = (group: number[]): boolean => group.some((i) => items[i]!.limit.kind === 'lease');
    // A group of SHADOW limits only, beside enforced ones elsewhere, is
    // decided limit by limit (the module refuses an all-SHADOW call).
    const shadowOnly = (group: number[]): boolean => enforced.some((e) => e) && group.every((i) => !enforced[i]);
    for (let n = 0; n < groups.length; n++) {
      const group = groups[n]!;
      const sub = group.map((i) => items[i]!);
      const how = { quantity: options.quantity, deadline: options.deadline, id: leased(group) ? options.id : undefined };
      if (shadowOnly(group)) {
        const s = await this.decideShadow(sub, how);
        group.forEach((i, j) => (results[i] = s.results[j]!));
        taken.push(...s.taken.map((j) => group[j]!));
        continue;
      }
      const r = await this.allow(sub, how);
      group.forEach((i, j) => (results[i] = r.results[j]!));
      if (r.limited) {
        await this.undo(items, taken, options.quantity ?? 1, options.id, options.deadline);
        for (const later of groups.slice(n + 1)) {
          const peekHow = { quantity: options.quantity, deadline: options.deadline };
          const laterItems = later.map((i) => items[i]!);
          const p = shadowOnly(later)
            ? await this.decideShadow(laterItems, peekHow, true)
            : await this.peek(laterItems, peekHow);
          later.forEach((i, j) => (results[i] = p.results[j]!));
        }
        return decision(results, bindingIndex(results, enforced), []);
      }
      // A SHADOW limit that would refuse recorded nothing.
      taken.push(...group.filter((i) => enforced[i] || !results[i]!.limited));
      if (groups.length === 1) return decision(results, group[r.index - 1]!, taken);
    }
    return decision(results, bindingIndex(results, enforced), taken);
  }

  /**
   * Each limit as a SHADOW spec would decide it, for calls whose limits are
   * all SHADOW (which RL.ALLOW refuses): one `RL.ALLOW 1 key spec` per limit
   * with SHADOW left out (RL.PEEK with `peek`), all sent at once (one round
   * trip), their refusals ignored: each key records what enforcing it alone
   * would have, and nothing is refused.
   */
  async decideShadow(entries: readonly Entry[], options: AllowOptions = {}, peek = false): Promise<ShadowDecision> {
    const items = entries.map(entry);
    const results = await Promise.all(
      items.map(({ key, limit }) => {
        const alone = [{ key, limit: limit.with({ shadow: false }) }];
        const how = { ...options, id: limit.kind === 'lease' ? options.id : undefined };
        return peek ? this.peek(alone, how) : this.allow(alone, how);
      }),
    );
    const own = results.map((r) => r.results[0]!);
    const taken = peek ? [] : own.flatMap((r, i) => (r.limited ? [] : [i]));
    return Object.freeze({ results: Object.freeze(own), taken: Object.freeze(taken) });
  }

  /**
   * Gives back what `decide` took on the limits at `indices`: RL.REFUND of
   * `quantity` (a limit's own `units` when it has them) on the rate limits,
   * RL.RELEASE of lease `id` on the lease limits.
   */
  async undo(
    entries: readonly Entry[],
    indices: readonly number[],
    quantity: Int = 1,
    id?: string,
    deadline?: number,
  ): Promise<void> {
    const items = entries.map(entry);
    await Promise.all(
      indices.map((i) => {
        const { key, limit } = items[i]!;
        if (limit.kind === 'lease') return id === undefined ? undefined : this.release(key, id, { deadline });
        const units = limit.units ?? quantity;
        if (BigInt(units) === 0n) return undefined; // nothing was taken
        return this.refund(key, limit, units, { deadline });
      }),
    );
  }

  /**
   * Runs `fn` holding a lease of `limit` on `key`: takes it (refused: throws
   * LeaseRefusedError with retryAfter), renews it every `renewEvery` of its
   * ttl while `fn` runs, and releases it exactly once when `fn` returns or
   * throws, or at once when `options.signal` aborts (then rejects with the
   * signal's reason; `fn`'s own signal aborts too). A renewal refused (the
   * lease expired and its slot was taken) aborts `fn`'s signal with
   * LeaseLostError; a renewal that fails for another reason is retried at
   * the next turn.
   */
  async withLease<T>(
    key: string,
    limit: Lease,
    fn: (lease: LeaseContext) => Promise<T> | T,
    options: WithLeaseOptions = {},
  ): Promise<T> {
    const outer = options.signal;
    outer?.throwIfAborted();
    const id = options.id ?? newLeaseId();
    const quantity = options.quantity === undefined ? {} : { quantity: options.quantity };
    const result = await this.take(key, limit, { ...quantity, id });
    if (result.limited) throw new LeaseRefusedError(key, result);
    const inner = new AbortController();
    let released: Promise<unknown> | undefined;
    const release = (): Promise<unknown> => (released ??= this.release(key, id).catch(() => false));
    const every = Math.max(1, Math.floor(limit.ttlMs * (options.renewEvery ?? 1 / 3)));
    let renewing = false;
    const timer = setInterval(() => {
      if (renewing || released) return;
      renewing = true;
      this.take(key, limit, { ...quantity, id })
        .then((r) => {
          if (r.limited && !released) inner.abort(new LeaseLostError(`lease ${id} on ${key} was lost`));
        })
        .catch(() => undefined)
        .finally(() => (renewing = false));
    }, every);
    timer.unref();
    let onAbort: (() => void) | undefined;
    const aborted = new Promise<never>((_, reject) => {
      if (!outer) return;
      onAbort = () => {
        inner.abort(outer.reason);
        reject(outer.reason);
      };
      outer.addEventListener('abort', onAbort, { once: true });
    });
    aborted.catch(() => undefined);
    try {
      return await Promise.race([Promise.resolve().then(() => fn({ id, result, signal: inner.signal })), aborted]);
    } finally {
      clearInterval(timer);
      if (onAbort) outer?.removeEventListener('abort', onAbort);
      await release();
    }
  }
}

// `position` is 0-based; the Decision's `index` is 1-based like RL.ALLOW's.
function decision(results: Result[], position: number, taken: number[]): Decision {
  const b = results[position]!;
  return Object.freeze({
    ...b,
    index: position + 1,
    binding: b,
    results: Object.freeze(results),
    taken: Object.freeze(taken),
  });
}
