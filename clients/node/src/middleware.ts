// Rate limiting for HTTP servers: a core over node's request and response,
// and its two faces, an Express middleware and a Fastify plugin.
//
// Each request costs `quantity` (1) of every limit of the policy, decided
// by one RL.ALLOW (or one per hash slot, with give-back, on a cluster). A
// refused request gets 429 with the header fields of headers.ts; an
// allowed one goes on with them. Lease limits (`lease(limit, ttl)`) take a
// lease named by a fresh id in the same call, released once when the
// response is over (sent in full, or its connection closed first).
//
// When Redis fails: the decision has `timeoutMs` from the request's start,
// connecting included; the request then gets 503 (failing closed) or goes
// on without limit and without fields (`failOpen`). One log line when the
// limiter starts failing, one when it answers again. An ERR or WRONGTYPE
// reply (a bad limit, a key of another type) is a configuration or
// programming error, not an outage: it is answered the same way and logged
// once per distinct message, as such.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RedisClient } from './client';
import { withDeadline } from './client';
import { ArgumentError, WrongTypeError } from './errors';
import { type NamedLimit, rateLimitHeaders } from './headers';
import type { Limit } from './limits';
import { type Decision, RateLimiter, newLeaseId } from './limiter';

type Entry = { readonly key: string; readonly limit: Limit };
import type { BackendChoice } from './backend';

/** What a key template may name. */
export interface RequestValues {
  /** The X-Client-Id header, or else the peer address (see `clientId`). */
  readonly client: string;
  readonly ip: string;
  /** The path, without the query. */
  readonly path: string;
  readonly method: string;
}

/** One limit of the policy. */
export interface PolicyEntry {
  /** The policy name in the header fields. */
  readonly name: string;
  /**
   * The key: a template naming `$client`, `$ip`, `$path`, `$method`
   * (`rl:{user:$client}:m`), or a function of the request.
   */
  readonly key: string | ((values: RequestValues, req: IncomingMessage) => string);
  readonly limit: Limit;
}

export interface MiddlewareOptions {
  /** An ioredis or node-redis client (or cluster); or `limiter`. */
  readonly client?: RedisClient;
  readonly limiter?: RateLimiter;
  /** With `client`: the backend (default `auto`). */
  readonly backend?: BackendChoice;
  /** The policy: 1 to 16 limits, every one taken by each request. */
  readonly limits: readonly PolicyEntry[];
  /** `$client`: default the X-Client-Id header, or else the peer address. */
  readonly clientId?: (req: IncomingMessage) => string | undefined;
  /** What a request costs (default 1). */
  readonly quantity?: number;
  /** A request the limiter could not decide goes on, unlimited (default false: 503). */
  readonly failOpen?: boolean;
  /** The longest a decision may take, from the request's start, connecting included (default 250 ms). */
  readonly timeoutMs?: number;
  /** Give the units back (RL.REFUND) when the response's status is 5xx (default false). */
  readonly refund5xx?: boolean;
  /** One RL.ALLOW per hash slot, with give-back (default: when the client is a cluster). */
  readonly groupBySlot?: boolean;
  /** Where the log lines go (default console.error). */
  readonly log?: (line: string) => void;
}

const VARIABLES = ['client', 'ip', 'path', 'method'];
const VARIABLE = /\$([a-z]+)/g;

/**
 * ioredis options that keep every call within `timeoutMs`: connect and
 * command timeouts, no offline queue, no retry, no resend after a
 * reconnection, reconnecting in the background at most 500 ms apart.
 */
export function ioredisOptions(timeoutMs = 250): Record<string, unknown> {
  return {
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    enableOfflineQueue: false,
    autoResendUnfulfilledCommands: false,
    maxRetriesPerRequest: 0,
    retryStrategy: (times: number) => Math.min(50 * times, 500),
  };
}

// The limiter's health, for the log: one line when its calls start
// failing, one when they succeed again.
class Health {
  private failingSince: number | null = null;
  private failures = 0;
  lastError: Error | null = null;
  private readonly reported = new Set<string>();

  constructor(
    private readonly log: (line: string) => void,
    private readonly failOpen: boolean,
  ) {}

  failed(err: Error): void {
    this.failures++;
    if (this.failingSince !== null) return;
    this.failingSince = Date.now();
    const last = this.lastError;
    const cause = last && !err.message.includes(last.message) ? `; ${last.message}` : '';
    const then = this.failOpen ? 'letting requests through unlimited (failOpen)' : 'answering 503';
    this.log(`rate limiter unavailable (${err.message}${cause}); ${then} until it answers again`);
  }

  succeeded(): void {
    if (this.failingSince === null) return;
    const seconds = ((Date.now() - this.failingSince) / 1000).toFixed(1);
    this.log(`rate limiter available again, after ${this.failures} failed calls in ${seconds} s`);
    this.failingSince = null;
    this.failures = 0;
  }

  misconfigured(err: Error): void {
    if (this.reported.has(err.message)) return;
    this.reported.add(err.message);
    this.log(`rate limiter configuration error (not an outage): ${err.message}`);
  }
}

/** What the core answers for a request. */
type Verdict =
  | { readonly pass: true; readonly headers: Record<string, string> }
  | { readonly pass: false; readonly status: number; readonly headers: Record<string, string>; readonly body: string };

function validate(limits: readonly PolicyEntry[]): void {
  if (limits.length === 0) throw new TypeError('no limit given');
  const names = limits.map((l) => l.name);
  if (new Set(names).size !== names.length) throw new TypeError(`policy names must differ: ${names.join(', ')}`);
  for (const l of limits) {
    if (typeof l.key !== 'string') continue;
    for (const [, v] of l.key.matchAll(VARIABLE)) {
      if (!VARIABLES.includes(v!)) {
        throw new TypeError(`limit ${l.name}: unknown $${v} in ${l.key} (expected $client, $ip, $path, $method)`);
      }
    }
  }
}

// Calls `give` once, when the response is over: 'finish' (sent in full) or
// 'close' (its connection closed; it also follows 'finish'). Listens from
// the request's start, so a client gone while the limiter decided counts.
function whenOver(res: ServerResponse): (give: () => void) => void {
  let over = false;
  let give: (() => void) | null = null;
  const end = (): void => {
    if (over) return;
    over = true;
    give?.();
  };
  res.once('finish', end);
  res.once('close', end);
  return (g) => {
    give = g;
    if (over) g();
  };
}

class Guard {
  private readonly limiter: RateLimiter;
  private readonly limits: readonly PolicyEntry[];
  private readonly named: readonly NamedLimit[];
  private readonly timeoutMs: number;
  private readonly failOpen: boolean;
  private readonly refund5xx: boolean;
  private readonly groupBySlot: boolean;
  private readonly quantity: number;
  private readonly leased: boolean;
  private readonly clientId: (req: IncomingMessage) => string | undefined;
  private readonly health: Health;

  constructor(options: MiddlewareOptions) {
    validate(options.limits);
    if (options.limiter) this.limiter = options.limiter;
    else if (options.client) this.limiter = new RateLimiter(options.client, { backend: options.backend ?? 'auto' });
    else throw new TypeError('give a client or a limiter');
    this.limits = options.limits;
    this.named = options.limits.map(({ name, limit }) => ({ name, limit }));
    this.timeoutMs = options.timeoutMs ?? 250;
    this.failOpen = options.failOpen === true;
    this.refund5xx = options.refund5xx === true;
    this.groupBySlot = options.groupBySlot ?? this.limiter.connection.isCluster;
    this.quantity = options.quantity ?? 1;
    this.leased = options.limits.some((l) => l.limit.kind === 'lease');
    this.clientId = options.clientId ?? ((req) => header(req, 'x-client-id'));
    this.health = new Health(options.log ?? ((line) => console.error(line)), this.failOpen);
    // The client's error events name the cause in the first log line; and
    // without a listener ioredis prints each one (a line per reconnection
    // attempt) and node-redis throws.
    const emitter = this.limiter.connection.client as { on?: (e: string, f: (err: Error) => void) => void };
    if (typeof emitter.on === 'function') {
      emitter.on('error', (err) => (this.health.lastError = err));
      emitter.on('ready', () => (this.health.lastError = null));
    }
  }

  private entries(req: IncomingMessage): Entry[] {
    const ip = req.socket.remoteAddress ?? '';
    const values: RequestValues = {
      client: this.clientId(req) || ip,
      ip,
      path: (req.url ?? '/').split('?')[0]!,
      method: req.method ?? '',
    };
    return this.limits.map((l) => ({
      key:
        typeof l.key === 'function'
          ? l.key(values, req)
          : l.key.replace(VARIABLE, (_, v: string) => values[v as keyof RequestValues]),
      limit: l.limit,
    }));
  }

  async check(req: IncomingMessage, res: ServerResponse, started: number): Promise<Verdict> {
    const entries = this.entries(req);
    const id = this.leased ? newLeaseId() : undefined;
    const over = this.leased ? whenOver(res) : null;
    const deadline = started + this.timeoutMs;
    let decision: Decision;
    try {
      decision = await withDeadline(
        this.limiter.decide(entries, { groupBySlot: this.groupBySlot, deadline, id, quantity: this.quantity }),
        deadline,
        `no answer within ${this.timeoutMs} ms`,
      );
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      if (error instanceof ArgumentError || error instanceof WrongTypeError) this.health.misconfigured(error);
      else {
        this.health.failed(error);
        // Redis may still carry out a late RL.ALLOW (slow, not gone): its
        // lease would hold a slot until its ttl. Release it too, unlogged;
        // it follows the RL.ALLOW on the same connection.
        if (this.leased) this.releaseLeases(entries, allIndices(entries), id!, false);
      }
      if (this.failOpen) return { pass: true, headers: {} };
      return error instanceof ArgumentError || error instanceof WrongTypeError
        ? { pass: false, status: 500, headers: {}, body: 'rate limiter misconfigured\n' }
        : { pass: false, status: 503, headers: {}, body: 'rate limiter unavailable\n' };
    }
    this.health.succeeded();
    const headers = rateLimitHeaders(decision, this.named);
    if (decision.limited) {
      const body =
        decision.retryAfter >= 0
          ? `rate limited: retry in ${headers['Retry-After']} s\n`
          : 'rate limited: this request exceeds the capacity\n';
      return { pass: false, status: 429, headers, body };
    }
    const leases = decision.taken.filter((i) => entries[i]!.limit.kind === 'lease');
    if (leases.length > 0) over!(() => this.releaseLeases(entries, leases, id!, true));
    if (this.refund5xx) {
      const rates = decision.taken.filter((i) => entries[i]!.limit.kind !== 'lease');
      res.once('finish', () => {
        if (res.statusCode >= 500) this.giveBack(entries, rates);
      });
    }
    return { pass: true, headers };
  }

  // RL.REFUND of a failed request's units, with a deadline of its own.
  private giveBack(entries: Entry[], indices: number[]): void {
    const deadline = Date.now() + this.timeoutMs;
    withDeadline(
      this.limiter.undo(entries, indices, this.quantity, undefined, deadline),
      deadline,
      `no answer within ${this.timeoutMs} ms`,
    ).then(
      () => this.health.succeeded(),
      (err: Error) => this.health.failed(err),
    );
  }

  // RL.RELEASE of a request's leases, with a deadline of its own; nothing
  // waits for it. One that fails leaves its lease to the ttl.
  private releaseLeases(entries: Entry[], indices: number[], id: string, report: boolean): void {
    const deadline = Date.now() + this.timeoutMs;
    const leases = indices.filter((i) => entries[i]!.limit.kind === 'lease');
    withDeadline(
      this.limiter.undo(entries, leases, this.quantity, id, deadline),
      deadline,
      `no answer within ${this.timeoutMs} ms`,
    ).then(
      () => report && this.health.succeeded(),
      (err: Error) => report && this.health.failed(err),
    );
  }
}

function allIndices(entries: Entry[]): number[] {
  return entries.map((_, i) => i);
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** An Express (or connect) middleware: `app.use(expressRateLimit({ client, limits }))`. */
export function expressRateLimit(
  options: MiddlewareOptions,
): (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void {
  const guard = new Guard(options);
  return (req, res, next) => {
    const started = Date.now();
    guard.check(req, res, started).then(
      (verdict) => {
        for (const [name, value] of Object.entries(verdict.headers)) res.setHeader(name, value);
        if (verdict.pass) {
          next();
          return;
        }
        res.statusCode = verdict.status;
        res.setHeader('Content-Type', 'text/plain; charset=utf-8');
        res.setHeader('Content-Length', Buffer.byteLength(verdict.body));
        res.end(verdict.body);
      },
      (err: unknown) => next(err),
    );
  };
}

/** The parts of Fastify the plugin uses. */
export interface FastifyInstanceLike {
  addHook(name: 'onRequest', hook: (request: FastifyRequestLike, reply: FastifyReplyLike) => Promise<unknown>): unknown;
}
export interface FastifyRequestLike {
  readonly raw: IncomingMessage;
}
export interface FastifyReplyLike {
  readonly raw: ServerResponse;
  header(name: string, value: string): unknown;
  code(status: number): FastifyReplyLike;
  send(body: string): unknown;
}

/**
 * A Fastify plugin: `app.register(fastifyRateLimit, { client, limits })`.
 * Its onRequest hook decides every request of the instance it is registered
 * on (not encapsulated: it applies to the routes registered beside it).
 */
export const fastifyRateLimit = Object.assign(
  function fastifyRateLimit(instance: FastifyInstanceLike, options: MiddlewareOptions, done: (err?: Error) => void): void {
    let guard: Guard;
    try {
      guard = new Guard(options);
    } catch (err) {
      done(err as Error);
      return;
    }
    instance.addHook('onRequest', async (request, reply) => {
      const verdict = await guard.check(request.raw, reply.raw, Date.now());
      for (const [name, value] of Object.entries(verdict.headers)) reply.header(name, value);
      if (!verdict.pass) {
        reply.header('Content-Type', 'text/plain; charset=utf-8');
        await reply.code(verdict.status).send(verdict.body);
        return reply;
      }
      return undefined;
    });
    done();
  },
  { [Symbol.for('skip-override')]: true, [Symbol.for('fastify.display-name')]: 'redis-ratelimit' },
);
