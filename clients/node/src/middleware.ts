// Rate limiting for HTTP servers: a core over node's request and response,
// and its two faces, an Express middleware and a Fastify plugin.
//
// Each request costs `quantity` (1) of every limit of the policy, decided
// by one RL.ALLOW (or one per hash slot, with give-back, on a cluster). A
// refused request (a blocked key included) gets 429 with the header fields
// of headers.ts; an allowed one goes on with them. Lease limits
// (`lease(limit, ttl)`) take a lease named by a fresh id in the same call,
// released once when the response is over (sent in full, or its connection
// closed first). A shadow rule is a SHADOW spec of the same RL.ALLOW: it
// never refuses and is not in the header fields; when every rule a request
// matches is shadow, each goes alone without SHADOW (the module refuses an
// all-SHADOW call), its refusal ignored. With `metrics`, each decision is
// reported (metrics.ts, docs/metrics.md).
//
// When Redis fails: the decision has `timeoutMs` from the request's start,
// connecting included; the request then gets 503 (failing closed) or goes
// on without limit and without fields (`failOpen`). One log line when the
// limiter starts failing, one when it answers again. An ERR or WRONGTYPE
// reply (a bad limit, a key of another type) is a configuration or
// programming error, not an outage: it is answered the same way and logged
// once per distinct message, as such.

import type { IncomingMessage, ServerResponse } from 'node:http';
import { BlockList, isIP } from 'node:net';
import type { RedisClient } from './client';
import { withDeadline } from './client';
import { ArgumentError, BackendUnavailableError, WrongTypeError } from './errors';
import { type NamedLimit, rateLimitHeaders } from './headers';
import type { Int, Limit } from './limits';
import { type Decision, RateLimiter, newLeaseId } from './limiter';
import type { DecisionMetrics, RequestOutcome, RuleOutcome } from './metrics';
import type { Result } from './results';

type Entry = { readonly key: string; readonly limit: Limit };
import type { BackendChoice } from './backend';

/** What a key template may name. */
export interface RequestValues {
  /** `clientId(req)`, else `clientHeader` from a trusted proxy, else `ip` (docs/middleware.md). */
  readonly client: string;
  /** The peer address, or from a trusted proxy the forwarded one. */
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
  /** BLOCK b (the limit's unit): a refusal blocks the key for `b` (the same as the limit's own `block`). */
  readonly block?: Int;
  /** A shadow rule: decided and counted, never refusing, not in the header fields (the limit's own `shadow`). */
  readonly shadow?: boolean;
}

/** Limits for chosen routes, decided with the middleware's own in one RL.ALLOW. */
export interface RouteLimits {
  /** An exact path (`/login`) or a prefix ending in `*` (`/api/*`). */
  readonly path: string;
  /** Upper-case methods (default every method). */
  readonly methods?: readonly string[];
  readonly limits: readonly PolicyEntry[];
}

export interface MiddlewareOptions {
  /** An ioredis or node-redis client (or cluster); or `limiter`. */
  readonly client?: RedisClient;
  readonly limiter?: RateLimiter;
  /** With `client`: the backend (default `auto`). */
  readonly backend?: BackendChoice;
  /** The policy: 1 to 16 limits, every one taken by each request. */
  readonly limits: readonly PolicyEntry[];
  /** Limits of chosen routes, decided in the same RL.ALLOW as `limits`. */
  readonly routes?: readonly RouteLimits[];
  /** True: the request passes untouched (no command, no header field). */
  readonly skip?: (req: IncomingMessage) => boolean;
  /** Peers whose forwarding header is believed: addresses, CIDR ranges, or '*' (default none). */
  readonly trustedProxies?: string | readonly string[];
  /** The forwarding header of a trusted peer: 'X-Forwarded-For' (default) or 'Forwarded'. */
  readonly proxyHeader?: string;
  /** A header naming the client (X-Client-Id), believed from a trusted peer only (default none). */
  readonly clientHeader?: string;
  /** `$client` when it returns a non-empty string (an authenticated user id). */
  readonly clientId?: (req: IncomingMessage) => string | undefined;
  /** What a request costs (default 1). */
  readonly quantity?: number;
  /** A request the limiter could not decide goes on, unlimited (default false: 503, or 500 for a configuration error). */
  readonly failOpen?: boolean;
  /** The longest a decision may take, from the request's start, connecting included (default 250 ms). */
  readonly timeoutMs?: number;
  /** Give the units back (RL.REFUND) when the response's status is 5xx (default false). */
  readonly refund5xx?: boolean;
  /** One RL.ALLOW per hash slot, with give-back (default: when the client is a cluster). */
  readonly groupBySlot?: boolean;
  /** Where the log lines go (default console.error). */
  readonly log?: (line: string) => void;
  /** Told of every decision (`openTelemetryMetrics()`: docs/metrics.md); default none. */
  readonly metrics?: DecisionMetrics;
}

// A rule's limit with the rule's own block and shadow.
function ruleLimit(rule: PolicyEntry): Limit {
  if (rule.block === undefined && rule.shadow === undefined) return rule.limit;
  const changes = { ...(rule.block === undefined ? {} : { block: rule.block }), ...(rule.shadow === undefined ? {} : { shadow: rule.shadow }) };
  return (rule.limit as { with(c: typeof changes): Limit }).with(changes);
}

// Who a request comes from (docs/middleware.md, Keys and identity).
class Identity {
  private readonly every: boolean;
  private readonly list: BlockList | null;
  private readonly forwarded: boolean;
  private readonly clientHeader: string | undefined;

  constructor(options: MiddlewareOptions) {
    const given = options.trustedProxies ?? [];
    const proxies = (typeof given === 'string' ? given.split(',') : [...given]).map((p) => p.trim()).filter((p) => p);
    this.every = proxies.includes('*');
    this.list = null;
    const rest = proxies.filter((p) => p !== '*');
    if (rest.length > 0) {
      const list = new BlockList();
      for (const p of rest) {
        const [address, bits] = p.split('/');
        const type = isIP(address!) === 6 ? 'ipv6' : isIP(address!) === 4 ? 'ipv4' : null;
        if (type === null || (bits !== undefined && !/^\d+$/.test(bits))) {
          throw new TypeError(`trustedProxies: ${p} is not an IP address or CIDR range`);
        }
        if (bits === undefined) list.addAddress(address!, type);
        else list.addSubnet(address!, Number(bits), type);
      }
      this.list = list;
    }
    const header = (options.proxyHeader ?? 'X-Forwarded-For').toLowerCase();
    if (header !== 'x-forwarded-for' && header !== 'forwarded') {
      throw new TypeError(`proxyHeader must be X-Forwarded-For or Forwarded, not ${options.proxyHeader}`);
    }
    this.forwarded = header === 'forwarded';
    this.clientHeader = options.clientHeader?.toLowerCase();
  }

  trusted(address: string): boolean {
    if (this.every) return true;
    if (this.list === null) return false;
    const type = isIP(address);
    if (type === 0) return false;
    return this.list.check(address, type === 6 ? 'ipv6' : 'ipv4');
  }

  /** `ip` and the trusted client header's value ('' when none). */
  resolve(req: IncomingMessage): { ip: string; client: string } {
    const peer = plainAddress(req.socket.remoteAddress ?? '');
    if (!this.trusted(peer)) return { ip: peer, client: '' };
    const value = headerLines(req, this.forwarded ? 'forwarded' : 'x-forwarded-for');
    const hops = (this.forwarded ? forwardedFor(value) : value.split(',').map((h) => h.trim())).filter((h) => h);
    let ip = peer;
    if (hops.length > 0) {
      ip = plainAddress([...hops].reverse().find((h) => !this.trusted(plainAddress(h))) ?? hops[0]!);
    }
    const client = this.clientHeader ? headerLines(req, this.clientHeader).trim() : '';
    return { ip, client };
  }
}

// An IPv4-mapped IPv6 address written as IPv4.
function plainAddress(address: string): string {
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}

// A header's field lines joined with ', '.
function headerLines(req: IncomingMessage, name: string): string {
  const v = req.headers[name];
  return Array.isArray(v) ? v.join(', ') : (v ?? '');
}

// The for= of each element of a Forwarded field (RFC 7239): unquoted, without brackets or port.
function forwardedFor(value: string): string[] {
  const found: string[] = [];
  for (const element of value.split(',')) {
    for (const pair of element.split(';')) {
      const at = pair.indexOf('=');
      if (at < 0 || pair.slice(0, at).trim().toLowerCase() !== 'for') continue;
      let v = pair.slice(at + 1).trim().replace(/^"|"$/g, '');
      if (v.startsWith('[')) v = v.slice(1).split(']')[0]!;
      else if ((v.match(/:/g) ?? []).length === 1) v = v.split(':')[0]!;
      found.push(v);
    }
  }
  return found;
}

function routeMatches(route: RouteLimits, method: string, path: string): boolean {
  if (route.methods && !route.methods.includes(method.toUpperCase())) return false;
  return route.path.endsWith('*') ? path.startsWith(route.path.slice(0, -1)) : path === route.path;
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

// The limiter's health, for the log (docs/middleware.md, The log): one
// line when its calls start failing, one when they succeed again; a
// configuration error once per distinct message, never as an outage.
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
    const then = this.failOpen ? 'letting requests through unlimited (fail open)' : 'answering 503';
    this.log(`rate limiter unavailable (${err.name}: ${err.message}${cause}); ${then} until it answers again`);
  }

  succeeded(): void {
    if (this.failingSince === null) return;
    const seconds = ((Date.now() - this.failingSince) / 1000).toFixed(1);
    this.log(`rate limiter available again, after ${this.failures} failed calls in ${seconds} s`);
    this.failingSince = null;
    this.failures = 0;
  }

  misconfigured(err: Error): void {
    const cause = `${err.name}: ${err.message}`;
    if (this.reported.has(cause) || this.reported.size >= 100) return;
    this.reported.add(cause);
    const then = this.failOpen ? 'letting requests through unlimited (fail open)' : 'answering 500';
    this.log(`rate limiter configuration error (${cause}): not an outage, the policy or its keys must be fixed; ${then} meanwhile`);
  }
}

/**
 * An error no retry cures (docs/middleware.md, Responses): a refused
 * argument (ERR), WRONGTYPE, the module missing, NOPERM, CROSSSLOT, bad
 * credentials, a policy that cannot make a request's keys. The rest is an outage.
 */
export function isConfigurationError(err: unknown): boolean {
  if (err instanceof ArgumentError || err instanceof WrongTypeError || err instanceof BackendUnavailableError) return true;
  if (err instanceof TypeError || err instanceof RangeError) return true;
  const message = err instanceof Error ? err.message : '';
  return /^(NOPERM|CROSSSLOT|NOAUTH|WRONGPASS)\b/.test(message);
}

/** What the core answers for a request. */
type Verdict =
  | { readonly pass: true; readonly headers: Record<string, string> }
  | { readonly pass: false; readonly status: number; readonly headers: Record<string, string>; readonly body: string };

function validate(limits: readonly PolicyEntry[], routes: readonly RouteLimits[]): void {
  if (limits.length === 0) throw new TypeError('no limit given');
  for (const group of [limits, ...routes.map((r) => [...limits, ...r.limits])]) {
    const names = group.map((l) => l.name);
    if (new Set(names).size !== names.length) throw new TypeError(`policy names must differ: ${names.join(', ')}`);
    if (names.length > 16) throw new TypeError(`${names.length} limits: RL.ALLOW takes 1 to 16 keys`);
  }
  for (const l of [...limits, ...routes.flatMap((r) => r.limits)]) {
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
  private readonly routes: readonly RouteLimits[];
  private readonly skip: ((req: IncomingMessage) => boolean) | undefined;
  private readonly identity: Identity;
  private readonly timeoutMs: number;
  private readonly failOpen: boolean;
  private readonly refund5xx: boolean;
  private readonly groupBySlot: boolean;
  private readonly quantity: number;
  private readonly clientId: ((req: IncomingMessage) => string | undefined) | undefined;
  private readonly health: Health;
  private readonly metrics: DecisionMetrics | undefined;

  constructor(options: MiddlewareOptions) {
    validate(options.limits, options.routes ?? []);
    if (options.limiter) this.limiter = options.limiter;
    else if (options.client) this.limiter = new RateLimiter(options.client, { backend: options.backend ?? 'auto' });
    else throw new TypeError('give a client or a limiter');
    this.limits = options.limits;
    this.routes = options.routes ?? [];
    this.skip = options.skip;
    this.identity = new Identity(options);
    this.timeoutMs = options.timeoutMs ?? 250;
    this.failOpen = options.failOpen === true;
    this.refund5xx = options.refund5xx === true;
    this.groupBySlot = options.groupBySlot ?? this.limiter.connection.isCluster;
    this.quantity = options.quantity ?? 1;
    this.clientId = options.clientId;
    this.health = new Health(options.log ?? ((line) => console.error(line)), this.failOpen);
    this.metrics = options.metrics;
    // The client's error events name the cause in the first log line; and
    // without a listener ioredis prints each one (a line per reconnection
    // attempt) and node-redis throws.
    const emitter = this.limiter.connection.client as { on?: (e: string, f: (err: Error) => void) => void };
    if (typeof emitter.on === 'function') {
      emitter.on('error', (err) => (this.health.lastError = err));
      emitter.on('ready', () => (this.health.lastError = null));
    }
  }

  // The request's limits (the middleware's, then each matching route's) and their keys.
  private entries(req: IncomingMessage): { entries: Entry[]; named: NamedLimit[] } {
    const { ip, client } = this.identity.resolve(req);
    const path = (req.url ?? '/').split('?')[0]!;
    const method = req.method ?? '';
    const values: RequestValues = { client: this.clientId?.(req) || client || ip, ip, path, method };
    const limits = [...this.limits];
    for (const route of this.routes) if (routeMatches(route, method, path)) limits.push(...route.limits);
    if (limits.length > 16) throw new TypeError(`${limits.length} limits match ${method} ${path}: RL.ALLOW takes 1 to 16 keys`);
    const entries = limits.map((l) => ({
      key:
        typeof l.key === 'function'
          ? l.key(values, req)
          : l.key.replace(VARIABLE, (_, v: string) => values[v as keyof RequestValues]),
      limit: ruleLimit(l),
    }));
    return { entries, named: limits.map((l, i) => ({ name: l.name, limit: entries[i]!.limit })) };
  }

  // Reports a decision: each rule's own outcome, the request's, the time
  // since `started` (performance.now(); undefined: no command was sent).
  private report(named: NamedLimit[], results: readonly Result[] | null, limited: boolean, started: number | undefined): void {
    if (!this.metrics) return;
    const outcomes: RuleOutcome[] = named.map(({ limit }, i) => {
      if (results === null) return 'error';
      if (!results[i]!.limited) return 'allowed';
      return limit.shadow ? 'shadow_limited' : 'limited';
    });
    const result: RequestOutcome = results === null ? 'error' : limited ? 'limited' : 'allowed';
    const seconds = started === undefined ? undefined : (performance.now() - started) / 1000;
    try {
      this.metrics.record(
        named.map((n) => n.name),
        outcomes,
        result,
        seconds,
      );
    } catch {
      // A metrics library's failure is not the request's.
    }
  }

  async check(req: IncomingMessage, res: ServerResponse, started: number): Promise<Verdict> {
    let entries: Entry[] = [];
    let named: NamedLimit[] = [];
    let id: string | undefined;
    const deadline = started + this.timeoutMs;
    let decision: Decision | null;
    let results: readonly Result[];
    let taken: readonly number[];
    // The decision's time (ratelimit.decision.duration), from the
    // request's arrival here; set once a command is to be sent.
    const arrived = performance.now();
    let called: number | undefined;
    try {
      if (this.skip?.(req)) return { pass: true, headers: {} };
      ({ entries, named } = this.entries(req));
      if (entries.some((e) => e.limit.kind === 'lease')) id = newLeaseId();
      const over = id !== undefined ? whenOver(res) : null;
      const how = { groupBySlot: this.groupBySlot, deadline, id, quantity: this.quantity };
      called = arrived;
      if (entries.every((e) => e.limit.shadow)) {
        decision = null;
        ({ results, taken } = await withDeadline(
          this.limiter.decideShadow(entries, how),
          deadline,
          `no answer within ${this.timeoutMs} ms`,
        ));
      } else {
        decision = await withDeadline(this.limiter.decide(entries, how), deadline, `no answer within ${this.timeoutMs} ms`);
        ({ results, taken } = decision);
      }
      this.health.succeeded();
      const leases = taken.filter((i) => entries[i]!.limit.kind === 'lease');
      if (!decision?.limited && leases.length > 0) over!(() => this.releaseLeases(entries, leases, id!, true));
      this.report(named, results, decision?.limited === true, called);
    } catch (err) {
      this.report(named, null, false, called);
      const error = err instanceof Error ? err : new Error(String(err));
      const misconfigured = isConfigurationError(error);
      if (misconfigured) this.health.misconfigured(error);
      else {
        this.health.failed(error);
        // Redis may still carry out a late RL.ALLOW (slow, not gone): its
        // lease would hold a slot until its ttl. Release it too, unlogged;
        // it follows the RL.ALLOW on the same connection.
        if (id !== undefined) this.releaseLeases(entries, allIndices(entries), id, false);
      }
      if (this.failOpen) return { pass: true, headers: {} };
      return misconfigured
        ? { pass: false, status: 500, headers: {}, body: 'rate limiter misconfigured\n' }
        : { pass: false, status: 503, headers: {}, body: 'rate limiter unavailable\n' };
    }
    const headers = decision === null ? {} : enforcedHeaders(decision, named);
    if (decision?.limited) {
      const body =
        decision.retryAfter >= 0
          ? `rate limited: retry in ${headers['Retry-After']} s\n`
          : 'rate limited: this request exceeds the capacity\n';
      return { pass: false, status: 429, headers, body };
    }
    if (this.refund5xx) {
      const rates = taken.filter((i) => entries[i]!.limit.kind !== 'lease');
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

// The header fields of the enforced rules: a shadow rule is not the client's business.
function enforcedHeaders(decision: Decision, named: NamedLimit[]): Record<string, string> {
  const enforced = named.flatMap((n, i) => (n.limit.shadow ? [] : [i]));
  if (enforced.length === named.length) return rateLimitHeaders(decision, named);
  const view = {
    ...decision,
    index: enforced.indexOf(decision.index - 1) + 1,
    results: enforced.map((i) => decision.results[i]!),
  };
  return rateLimitHeaders(view, enforced.map((i) => named[i]!));
}

function allIndices(entries: Entry[]): number[] {
  return entries.map((_, i) => i);
}

/**
 * An Express (or connect) middleware: `app.use(expressRateLimit({ client, limits }))`;
 * on one route, `app.post('/login', expressRateLimit({ client, limits }), handler)`
 * (a second decision when a global one runs too: to decide once, give the
 * global one `routes`). The decision's header fields are set before the
 * handler runs, so a field the handler sets replaces the middleware's.
 */
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

type FastifyHook = (request: FastifyRequestLike, reply: FastifyReplyLike) => Promise<unknown>;

function fastifyHook(guard: Guard): FastifyHook {
  return async (request, reply) => {
    const verdict = await guard.check(request.raw, reply.raw, Date.now());
    for (const [name, value] of Object.entries(verdict.headers)) reply.header(name, value);
    if (!verdict.pass) {
      reply.header('Content-Type', 'text/plain; charset=utf-8');
      await reply.code(verdict.status).send(verdict.body);
      return reply;
    }
    return undefined;
  };
}

/**
 * A Fastify plugin: `app.register(fastifyRateLimit, { client, limits })`.
 * Its onRequest hook decides every request of the instance it is registered
 * on (not encapsulated: it applies to the routes registered beside it).
 * `fastifyRateLimit.onRequest(options)` is the same decision as one route's
 * hook: `app.get('/login', { onRequest: fastifyRateLimit.onRequest({ client, limits }) }, handler)`
 * (a second decision when the plugin is registered too: to decide once, give
 * the plugin `routes`).
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
    instance.addHook('onRequest', fastifyHook(guard));
    done();
  },
  {
    [Symbol.for('skip-override')]: true,
    [Symbol.for('fastify.display-name')]: 'redis-ratelimit',
    /** A route's onRequest hook deciding `options` for that route's requests. */
    onRequest(options: MiddlewareOptions): FastifyHook {
      return fastifyHook(new Guard(options));
    },
  },
);
