// RateLimiter: one method per command, with the module's parameter names,
// resolving to typed results; the limits as values for RL.ALLOW, RL.PEEK and
// RL.REFUND; a lease helper; several limits across hash slots.
//
// Bad arguments: nothing is checked here. Every argument goes to the
// backend as the module's text (numbers in decimal), and the module's
// `ERR ...` reply comes back as an ArgumentError naming the argument (the
// Lua backend answers the same texts). The one exception is the shape of a
// JavaScript call that has no command line: RL.ALLOW's limits disagreeing
// on `ms` (the module's MS is one flag for the whole call) throws a
// TypeError before sending.

import { randomBytes } from 'node:crypto';
import { type Backend, type BackendChoice, type CommandName, chooseBackend } from './backend';
import { type Connection, type RedisClient, type Route, connectionOf } from './client';
import { LeaseRefusedError, RateLimitError, translate } from './errors';
import type { Int, Lease, Limit, QuotaUnit, RateLimit } from './limits';
import { type AllowResult, type KeyState, type Result, toAllowResult, toKeyState, toResult } from './results';
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
export interface SlideCallOptions extends QuantityOptions {
  readonly precision?: Int;
}
export interface QuotaCallOptions extends QuantityOptions {
  readonly tz?: string;
}
export interface AllowOptions extends CallOptions {
  /** QUANTITY q (default 1). */
  readonly quantity?: Int;
  /** ID lease_id: the lease of the LEASE limits. */
  readonly id?: string;
}

/** A limit on a key: `[key, limit]` or `{ key, limit }`. */
export type Entry = readonly [key: string, limit: Limit] | { readonly key: string; readonly limit: Limit };

/** A decision over several limits, possibly across slots (RateLimiter.decide). */
export interface Decision extends AllowResult {
  /** 0-based positions of the limits that recorded the request (all when allowed, none when limited). */
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
 * resetAfter; ties to the lower index. Returns the 0-based position (an
 * AllowResult's `index` is this plus one).
 */
export function bindingIndex(results: readonly Result[]): number {
  const anyLimited = results.some((r) => r.limited);
  const retry = (r: Result): number => (r.retryAfter < 0 ? Infinity : r.retryAfter);
  let best = -1;
  results.forEach((r, i) => {
    if (anyLimited && !r.limited) return;
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
    options: QuantityOptions | undefined,
    extra: string[] = [],
  ): Promise<Result> {
    const args = [key, ...numbers];
    if (options?.quantity !== undefined) args.push(str(options.quantity));
    if (options?.ms) args.push('MS');
    args.push(...extra);
    return toResult(await this.call(name, args, this.route(key, options)));
  }

  /** RL.THROTTLE key max_burst count period [quantity] [MS]. */
  throttle(key: string, maxBurst: Int, count: Int, period: Int, options?: QuantityOptions): Promise<Result> {
    return this.single('THROTTLE', key, [str(maxBurst), str(count), str(period)], options);
  }

  /** RL.SLIDE key limit window [quantity] [MS] [PRECISION d]. */
  slide(key: string, limit: Int, window: Int, options?: SlideCallOptions): Promise<Result> {
    const extra = options?.precision === undefined ? [] : ['PRECISION', str(options.precision)];
    return this.single('SLIDE', key, [str(limit), str(window)], options, extra);
  }

  /** RL.SLICE key limit window slices [quantity] [MS]. */
  slice(key: string, limit: Int, window: Int, slices: Int, options?: QuantityOptions): Promise<Result> {
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

  /** RL.QUOTA key limit unit [quantity] [TZ zone] [MS]. */
  quota(key: string, limit: Int, unit: QuotaUnit, options?: QuotaCallOptions): Promise<Result> {
    const args = [key, str(limit), unit];
    if (options?.quantity !== undefined) args.push(str(options.quantity));
    if (options?.tz !== undefined) args.push('TZ', options.tz);
    if (options?.ms) args.push('MS');
    return this.call('QUOTA', args, this.route(key, options)).then(toResult);
  }

  /**
   * One limit alone, by its kind's command (RL.THROTTLE for a throttle
   * limit, ...). A lease limit needs `id`.
   */
  take(key: string, limit: Limit, options: { quantity?: Int; id?: string } & CallOptions = {}): Promise<Result> {
    const args = [key, ...limit.commandArgs()];
    if (limit.kind === 'lease') args.push(options.id ?? '');
    if (options.quantity !== undefined) args.push(str(options.quantity));
    if (limit.ms) args.push('MS');
    args.push(...limit.commandOptions());
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

  /** RL.REFUND key spec quantity [MS]: gives back up to `quantity` units. */
  async refund(key: string, limit: RateLimit, quantity: Int, options?: CallOptions): Promise<Result> {
    const args = [key, ...limit.spec(), str(quantity)];
    if (limit.ms) args.push('MS');
    return toResult(await this.call('REFUND', args, this.route(key, options)));
  }

  /**
   * RL.ALLOW over keys of any slots: with `groupBySlot`, one RL.ALLOW per
   * hash slot in the order of the limits; when a group refuses, what the
   * earlier groups took is given back (RL.REFUND, RL.RELEASE) and the later
   * groups are peeked at (RL.PEEK), so that the binding limit is the one a
   * single call would name. Without it, one RL.ALLOW.
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
    const leased = (group: number[]): boolean => group.some((i) => items[i]!.limit.kind === 'lease');
    for (let n = 0; n < groups.length; n++) {
      const group = groups[n]!;
      const sub = group.map((i) => items[i]!);
      const r = await this.allow(sub, {
        quantity: options.quantity,
        deadline: options.deadline,
        id: leased(group) ? options.id : undefined,
      });
      group.forEach((i, j) => (results[i] = r.results[j]!));
      if (r.limited) {
        await this.undo(items, taken, options.quantity ?? 1, options.id, options.deadline);
        for (const later of groups.slice(n + 1)) {
          const p = await this.peek(later.map((i) => items[i]!), { quantity: options.quantity, deadline: options.deadline });
          later.forEach((i, j) => (results[i] = p.results[j]!));
        }
        return decision(results, bindingIndex(results), []);
      }
      taken.push(...group);
      if (groups.length === 1) return decision(results, group[r.index - 1]!, taken);
    }
    return decision(results, bindingIndex(results), taken);
  }

  /**
   * Gives back what `decide` took on the limits at `indices`: RL.REFUND of
   * `quantity` on the rate limits, RL.RELEASE of lease `id` on the lease limits.
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
        return this.refund(key, limit, quantity, { deadline });
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
