// Typed replies: the five fields, RL.ALLOW's and RL.PEEK's seven elements,
// RL.INSPECT's field-value pairs per kind.

/** The five fields every limiter and RL.REFUND reply with. */
export interface Result {
  /** The request was refused. */
  readonly limited: boolean;
  /** The request was allowed (`!limited`). */
  readonly allowed: boolean;
  /** The capacity: `maxBurst + 1` for THROTTLE, `limit` for the others. */
  readonly limit: number;
  /** Units that could still be taken right now, after this request. */
  readonly remaining: number;
  /** When limited, the time until this request would pass, rounded up; -1 when allowed or never. */
  readonly retryAfter: number;
  /** The time until the limiter is full again, rounded up; 0 when it is. */
  readonly resetAfter: number;
}

/** RL.ALLOW's and RL.PEEK's reply: the binding limit's fields, its index, each limit's. */
export interface AllowResult extends Result {
  /** The binding limit's index, 1-based as the module answers it (1 is the first limit given). */
  readonly index: number;
  /** The binding limit's own result (`results[index - 1]`). */
  readonly binding: Result;
  /** Each limit's own result, in the order given. */
  readonly results: readonly Result[];
}

function int(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint') return Number(value);
  if (typeof value === 'string') return Number(value);
  throw new TypeError(`expected an integer in the reply, got ${typeof value}`);
}

export function toResult(reply: unknown): Result {
  if (!Array.isArray(reply) || reply.length < 5) throw new TypeError('expected the five fields of a limiter reply');
  const limited = int(reply[0]) === 1;
  return Object.freeze({
    limited,
    allowed: !limited,
    limit: int(reply[1]),
    remaining: int(reply[2]),
    retryAfter: int(reply[3]),
    resetAfter: int(reply[4]),
  });
}

export function toAllowResult(reply: unknown): AllowResult {
  if (!Array.isArray(reply) || reply.length !== 7 || !Array.isArray(reply[6])) {
    throw new TypeError("expected RL.ALLOW's seven elements");
  }
  const results = Object.freeze((reply[6] as unknown[]).map(toResult));
  const index = int(reply[5]);
  const binding = results[index - 1];
  if (binding === undefined) throw new TypeError(`binding index ${index} out of range 1..${results.length}`);
  return Object.freeze({ ...toResult(reply), index, binding, results });
}

interface Common {
  /** Milliseconds until the key expires. */
  readonly ttl: number;
  /** While the key is blocked (BLOCK): the block's end, Unix ms; absent otherwise. */
  readonly blockedUntil?: number;
  /** Bytes, as MEMORY USAGE counts them. */
  readonly memory: number;
}
export interface ThrottleState extends Common {
  readonly type: 'throttle';
  readonly tatAheadMs: number;
  readonly tatUnixMs: number;
}
export interface SlideState extends Common {
  readonly type: 'slide';
  readonly units: number;
  readonly entries: number;
  readonly oldestAgeMs: number;
  readonly newestAgeMs: number;
}
export interface SliceState extends Common {
  readonly type: 'slice';
  readonly windowMs: number;
  readonly slices: number;
  readonly units: number;
  readonly headAgeMs: number;
  /** Units per slice, newest first. */
  readonly counts: readonly number[];
}
export interface LeaseHolder {
  readonly leaseId: string;
  readonly weight: number;
  readonly ttlMs: number;
}
export interface LeaseState extends Common {
  readonly type: 'lease';
  readonly held: number;
  readonly leases: number;
  readonly holders: readonly LeaseHolder[];
}
export interface QuotaState extends Common {
  readonly type: 'quota';
  readonly unit: string;
  readonly zone: string;
  readonly used: number;
  readonly start: number;
  readonly end: number;
}
/** RL.INSPECT's reply, by the key's kind (`type`). */
export type KeyState = ThrottleState | SlideState | SliceState | LeaseState | QuotaState;

function camel(name: string): string {
  return name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
}

function text(value: unknown): string {
  return Buffer.isBuffer(value) ? value.toString() : String(value);
}

/** RL.INSPECT's pairs (a flat array under RESP2, a Map or object under RESP3) as a typed value. */
export function toKeyState(reply: unknown): KeyState | null {
  if (reply === null || reply === undefined) return null;
  let entries: [string, unknown][];
  if (Array.isArray(reply)) {
    entries = [];
    for (let i = 0; i + 1 < reply.length; i += 2) entries.push([text(reply[i]), reply[i + 1]]);
  } else if (reply instanceof Map) {
    entries = [...reply.entries()].map(([k, v]) => [text(k), v]);
  } else if (typeof reply === 'object') {
    entries = Object.entries(reply as Record<string, unknown>);
  } else {
    throw new TypeError("expected RL.INSPECT's field-value pairs");
  }
  const state: Record<string, unknown> = {};
  for (const [name, value] of entries) {
    if (name === 'type' || name === 'unit' || name === 'zone') state[name] = text(value);
    else if (name === 'counts') state[name] = Object.freeze((value as unknown[]).map(int));
    else if (name === 'holders') {
      state[name] = Object.freeze(
        (value as unknown[][]).map((h) => Object.freeze({ leaseId: text(h[0]), weight: int(h[1]), ttlMs: int(h[2]) })),
      );
    } else state[camel(name)] = int(value);
  }
  return Object.freeze(state) as unknown as KeyState;
}

/** One entry of RL.TOP: a key refused often on that node recently. */
export interface TopEntry {
  readonly key: string;
  /** Its refusals, decayed (half-life `ratelimit.top-half-life`) and rounded down. */
  readonly refusals: number;
  /** Its last refusal, Unix ms. */
  readonly lastRefusalMs: number;
}

/** RL.TOP's reply: `[key, refusals, last_refusal_ms]` per entry, most first. */
export function toTop(reply: unknown): TopEntry[] {
  if (!Array.isArray(reply)) throw new TypeError("expected RL.TOP's array");
  return reply.map((e: unknown) => {
    if (!Array.isArray(e) || e.length !== 3) throw new TypeError("expected RL.TOP's [key, refusals, last_refusal_ms]");
    return Object.freeze({ key: text(e[0]), refusals: int(e[1]), lastRefusalMs: int(e[2]) });
  });
}
