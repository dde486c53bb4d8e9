// A minimal HTTP server (node's http module, no framework) that rate limits
// every request, whatever its path and method, with one or several limits
// decided at once by RL.ALLOW, through ioredis and limits.js next to this
// file. (A method name that node's HTTP parser does not know is refused by
// node itself with 400, before any handler runs.)
//
// Each request costs one unit of every limit of the policy (RL_LIMITS,
// below). Allowed requests go on to the application, limited ones get 429.
// Every response that the limiter decided carries exactly these rate limit
// fields, the binding limit (the one that decided, or that is closest to
// deciding) in all but the first:
//
//   RateLimit-Policy: "<name>";q=<limit>;w=<window>, ...   (one item per limit)
//   RateLimit: "<name>";r=<remaining>;t=<seconds>
//   X-RateLimit-Limit: <limit>
//   X-RateLimit-Remaining: <remaining>
//   X-RateLimit-Reset: <reset_after>     (seconds from now, not a Unix time)
//   Retry-After: <retry_after>           (429 only)
//
// The first two are those of draft-ietf-httpapi-ratelimit-headers (the
// syntax of drafts -08 to -11); w is the policy's window (for THROTTLE the
// time its capacity takes to refill, see Limit.window in limits.js), and t
// the seconds until the limiter is full again, or on a 429 the Retry-After.
// The X- names carry the same numbers for the clients that read those.
//
// Concurrency: a limit `name key LEASE limit ttl` allows at most `limit`
// requests of a key in flight at once. Each request takes a lease named by
// a fresh random id, in the same RL.ALLOW as the rate limits (all or
// nothing), and gives it back (RL.RELEASE, once) when its response is
// over: sent in full (the response's 'finish'), or its connection closed
// first, the client gone ('close'), whichever comes first (see
// releaseWhenOver). Its item in RateLimit-Policy is
// "<name>";q=<limit>;qu="concurrent-requests", without a window. ttl is the
// safety net for a process that dies with requests in flight: their leases
// expire by themselves ttl seconds after they were taken, so it must be
// longer than the longest request. A full key answers 429; its Retry-After
// is the time until the oldest lease would expire if nobody released it,
// an upper bound: a slot comes back as soon as a request ends.
//
// When Redis fails: the limiter's answer takes at most RL_TIMEOUT_MS (250
// ms), counted from the request's start, connection attempts included: the
// client connects with that timeout, queues no command while disconnected
// (a request waits for a connection attempt under way, up to its
// deadline), resends none after a reconnection, and every command times out
// at the request's deadline. A request the limiter could not decide gets
// 503 (failing closed, the default), or with RL_FAIL_OPEN=yes goes to the
// application without a limit and without rate limit fields. The log has
// one line when the limiter starts failing and one when it answers again,
// never one per request (nor one per reconnection attempt). A release has
// a deadline of its own, and the response never waits for it; one that
// fails leaves its lease to the ttl, and is logged the same way.
//
// The application behind the limiter is a stand-in: it answers 200, or for
// a path /status/<code> that status (to see a failed request given back),
// or for /slow/<ms> 200 after that many milliseconds (at most 60000;
// sooner, without an answer, when the client goes away), to see requests
// in flight.
//
// Configuration (environment):
//   REDIS_URL        redis://127.0.0.1:6379 (with REDIS_CLUSTER=yes: any node)
//   REDIS_CLUSTER    no    yes: a Redis Cluster client; implies RL_GROUP_BY_SLOT
//   HOST, PORT       127.0.0.1, 8080
//   RL_LIMITS        the policy: `name key ALGORITHM numbers...` entries
//                    separated by `;`, the spec as in RL.ALLOW, times in
//                    seconds; the key may name $client (the X-Client-Id
//                    header, or else the peer address), $ip, $path, $method.
//                    `name key LEASE limit ttl` is a concurrency limit.
//                    Without it, one limit made of the four below:
//   RL_MAX_BURST     9     } RL_POLICY  RL_KEY_PREFIX$client  THROTTLE
//   RL_COUNT         10    }     RL_MAX_BURST RL_COUNT RL_PERIOD:
//   RL_PERIOD        60    }   10 requests per 60 s, in bursts of up to 10
//   RL_KEY_PREFIX    rl:http:
//   RL_POLICY        default
//   RL_GROUP_BY_SLOT no (yes with REDIS_CLUSTER): one RL.ALLOW per hash slot,
//                    giving back what earlier slots took when one refuses
//   RL_REFUND_5XX    no    yes: give the units back when the application
//                    answers 5xx
//   RL_TIMEOUT_MS    250   the longest the limiter may take to decide
//   RL_FAIL_OPEN     no    yes: when the limiter cannot decide, let the
//                    request through (no: answer 503)
'use strict';

const crypto = require('crypto');
const http = require('http');
const Redis = require('ioredis');
const limits = require('./limits');

const env = process.env;

function flag(name, fallback = 'no') {
  const value = (env[name] || fallback).toLowerCase();
  if (value !== 'yes' && value !== 'no') {
    console.error(`${name} must be yes or no, not ${JSON.stringify(value)}`);
    process.exit(2);
  }
  return value === 'yes';
}

const REDIS_URL = env.REDIS_URL || 'redis://127.0.0.1:6379';
const REDIS_CLUSTER = flag('REDIS_CLUSTER');
const HOST = env.HOST || '127.0.0.1';
const PORT = Number(env.PORT || 8080);
const GROUP_BY_SLOT = flag('RL_GROUP_BY_SLOT', REDIS_CLUSTER ? 'yes' : 'no');
const REFUND_5XX = flag('RL_REFUND_5XX');
const FAIL_OPEN = flag('RL_FAIL_OPEN');

function milliseconds(name, fallback) {
  const value = env[name] || fallback;
  if (!/^[0-9]+$/.test(value) || Number(value) === 0) {
    console.error(`${name} must be a positive number of milliseconds, not ${JSON.stringify(value)}`);
    process.exit(2);
  }
  return Number(value);
}
const TIMEOUT_MS = milliseconds('RL_TIMEOUT_MS', '250');

function policyFromEnvironment() {
  const text =
    env.RL_LIMITS ||
    [
      env.RL_POLICY || 'default',
      (env.RL_KEY_PREFIX || 'rl:http:') + '$client',
      'THROTTLE',
      env.RL_MAX_BURST || 9,
      env.RL_COUNT || 10,
      env.RL_PERIOD || 60,
    ].join(' ');
  try {
    return limits.parseLimits(text);
  } catch (err) {
    console.error(`RL_LIMITS: ${err.message}`);
    process.exit(2);
  }
}

const LIMITS = policyFromEnvironment();
// The concurrency limits; with one, each request names its lease.
const LEASES = LIMITS.flatMap((limit, i) => (limit.isLease ? [i] : []));
const LEASED = LEASES.length > 0;

// A Structured Field String (RFC 9651): quoted, with \ and " escaped.
function sfString(value) {
  if (!/^[\x20-\x7e]*$/.test(value)) {
    throw new Error(`not a printable ASCII string: ${JSON.stringify(value)}`);
  }
  return '"' + value.replace(/[\\"]/g, (c) => '\\' + c) + '"';
}
const NAMES = LIMITS.map((limit) => sfString(limit.name));

// Each connection attempt and each command is bounded by TIMEOUT_MS; no
// command waits in an offline queue, none is resent after a reconnection
// (its request was answered already), and a command in flight when the
// connection drops fails at once. Reconnection goes on in the background,
// at most 500 ms apart.
const CLIENT_OPTIONS = {
  connectTimeout: TIMEOUT_MS,
  commandTimeout: TIMEOUT_MS,
  enableOfflineQueue: false,
  autoResendUnfulfilledCommands: false,
  maxRetriesPerRequest: 0,
  retryStrategy: (times) => Math.min(50 * times, 500),
};
const redis = REDIS_CLUSTER
  ? new Redis.Cluster([REDIS_URL], {
      enableOfflineQueue: false,
      clusterRetryStrategy: (times) => Math.min(50 * times, 500),
      redisOptions: CLIENT_OPTIONS,
    })
  : new Redis(REDIS_URL, CLIENT_OPTIONS);

// The limiter's state, for the log: one line when its calls start failing,
// one when they succeed again, however many requests and reconnection
// attempts there are in between.
const health = {
  failingSince: null,
  failures: 0,
  lastError: null, // the client's latest error event, for the first line
  failed(err) {
    this.failures++;
    if (this.failingSince !== null) return;
    this.failingSince = Date.now();
    const cause = this.lastError && !err.message.includes(this.lastError.message) ? `; ${this.lastError.message}` : '';
    const then = FAIL_OPEN ? 'letting requests through unlimited (RL_FAIL_OPEN=yes)' : 'answering 503';
    console.error(`rate limiter unavailable (${err.message}${cause}); ${then} until it answers again`);
  },
  succeeded() {
    if (this.failingSince === null) return;
    const seconds = ((Date.now() - this.failingSince) / 1000).toFixed(1);
    console.error(`rate limiter available again, after ${this.failures} failed calls in ${seconds} s`);
    this.failingSince = null;
    this.failures = 0;
  },
};
// Without a listener, ioredis prints every error event ("[ioredis]
// Unhandled error event"), one per reconnection attempt.
redis.on('error', (err) => (health.lastError = err));
redis.on('ready', () => (health.lastError = null));

// Resolves when the client is connected, waiting (until `deadline`) only
// for a connection attempt under way; rejects at once while the client
// waits to reconnect, so that requests do not queue up behind an outage.
const waiting = new Set(); // { resolve, reject } of the requests waiting
function settle(how) {
  for (const w of waiting) how(w);
  waiting.clear();
}
redis.on('ready', () => settle((w) => w.resolve()));
for (const status of ['close', 'end']) {
  redis.on(status, () => settle((w) => w.reject(new Error(`connection attempt failed${lastError()}`))));
}
function lastError() {
  return health.lastError ? `: ${health.lastError.message}` : '';
}
function connected(deadline) {
  const { status } = redis;
  if (status === 'ready') return Promise.resolve();
  if (status !== 'connecting' && status !== 'connect') {
    return Promise.reject(new Error(`not connected (${status}${lastError()})`));
  }
  let waiter;
  const attempt = new Promise((resolve, reject) => waiting.add((waiter = { resolve, reject })));
  return withDeadline(attempt, deadline, () => `not connected within ${TIMEOUT_MS} ms`).finally(() =>
    waiting.delete(waiter),
  );
}

// `promise`, or a rejection at `deadline`.
function withDeadline(promise, deadline, what) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(what())), Math.max(0, deadline - Date.now()));
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

// The limiter's decision, by the request's deadline.
function decide(keys, leaseId, started) {
  const deadline = started + TIMEOUT_MS;
  const decision = connected(deadline).then(() =>
    limits.allow(redis, LIMITS, keys, { groupBySlot: GROUP_BY_SLOT, deadline, leaseId }),
  );
  return withDeadline(decision, deadline, () => `no answer within ${TIMEOUT_MS} ms`);
}

// RL.RELEASE of a request's leases, by a deadline of its own; nothing
// waits for it. A release that fails leaves its lease to its ttl, and
// (`report`) is counted and logged like a failed decision (one line per
// outage).
function releaseLeases(keys, indices, leaseId, report = true) {
  const deadline = Date.now() + TIMEOUT_MS;
  const done = connected(deadline).then(() => limits.release(redis, LIMITS, keys, indices, leaseId, deadline));
  withDeadline(done, deadline, () => `no answer within ${TIMEOUT_MS} ms`).then(
    () => report && health.succeeded(),
    (err) => report && health.failed(err),
  );
}

// Watches for the end of a response: sent in full ('finish'), or its
// connection closed before that ('close': the client went away; 'close'
// also follows 'finish'). Returns a function that takes the release, once
// the leases are taken, and calls it once: when the first of the two
// events comes, or at once if it came already (this listens from the
// request's start, so a client gone while the limiter decided counts).
function releaseWhenOver(res) {
  let over = false;
  let release = null;
  const end = () => {
    if (over) return;
    over = true;
    if (release) release();
  };
  res.once('finish', end);
  res.once('close', end);
  return (give) => {
    release = give;
    if (over) give();
  };
}

// One item of RateLimit-Policy: q requests per w seconds, or for a
// concurrency limit q requests at once (the draft's quota unit
// "concurrent-requests"; no window).
function policyItem(name, limit, f) {
  if (limit.isLease) return `${name};q=${f.limit};qu="concurrent-requests"`;
  return `${name};q=${f.limit};w=${limit.window}`;
}

// The rate limit fields of a decision (see the top of this file).
function rateLimitHeaders(decision) {
  const f = decision.fields[decision.binding];
  // RateLimit's t: no more than r units within t seconds. On a 429 that is
  // the Retry-After (the draft: Retry-After is not earlier than the end of
  // t); otherwise the time until the limiter is full again.
  const t = decision.limited && f.retryAfter >= 0 ? f.retryAfter : f.resetAfter;
  const headers = {
    'RateLimit-Policy': LIMITS.map((limit, i) => policyItem(NAMES[i], limit, decision.fields[i])).join(', '),
    RateLimit: `${NAMES[decision.binding]};r=${f.remaining};t=${t}`,
    'X-RateLimit-Limit': String(f.limit),
    'X-RateLimit-Remaining': String(f.remaining),
    'X-RateLimit-Reset': String(f.resetAfter),
  };
  // retryAfter is -1 only when the request can never fit (a cost above the
  // capacity); then there is nothing to wait for.
  if (decision.limited && f.retryAfter >= 0) headers['Retry-After'] = String(f.retryAfter);
  return headers;
}

// The stand-in for the service: resolves to { status, body }, or null when
// the client went away.
async function application(method, path, res) {
  const m = /^\/status\/([0-9]+)$/.exec(path);
  const status = m ? Number(m[1]) : 200;
  if (m && status >= 200 && status <= 599) return { status, body: `status ${status}\n` };
  const slow = /^\/slow\/([0-9]+)$/.exec(path);
  if (slow && Number(slow[1]) <= 60000) {
    const ms = Number(slow[1]);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve({ status: 200, body: `waited ${ms} ms\n` }), ms);
      res.once('close', () => {
        clearTimeout(timer);
        resolve(null); // no effect once resolved
      });
    });
  }
  return { status: 200, body: 'ok\n' };
}

// The application's answer; null when the client went away (nobody to
// answer).
async function answer(req, res, path) {
  const answered = await application(req.method, path, res);
  if (answered === null || res.destroyed) return null;
  return answered;
}

function send(res, status, headers, body) {
  res.writeHead(status, {
    ...headers,
    'Content-Type': 'text/plain; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(body);
}

async function handle(req, res) {
  const started = Date.now();
  req.resume(); // the body is not used: drop it
  const whenOver = LEASED ? releaseWhenOver(res) : null;
  const path = req.url.split('?')[0];
  const ip = req.socket.remoteAddress;
  const values = { client: req.headers['x-client-id'] || ip, ip, path, method: req.method };
  const keys = LIMITS.map((limit) => limit.render(values));
  const leaseId = LEASED ? crypto.randomBytes(16).toString('hex') : undefined;
  let decision;
  try {
    decision = await decide(keys, leaseId, started);
  } catch (err) {
    health.failed(err);
    // Redis may still carry out an RL.ALLOW that came too late (it was
    // slow, not gone), and its lease would then hold a slot until its ttl:
    // release it too. It follows the RL.ALLOW on the same connection, so
    // Redis runs it after; the ttl covers a connection lost meanwhile.
    if (LEASED) releaseLeases(keys, LEASES, leaseId, false);
    if (!FAIL_OPEN) {
      send(res, 503, {}, 'rate limiter unavailable\n');
      return;
    }
    // Fail open: the application answers, unlimited; no rate limit fields,
    // since there are no numbers to put in them.
    const answered = await answer(req, res, path);
    if (answered) send(res, answered.status, {}, answered.body);
    return;
  }
  health.succeeded();
  const headers = rateLimitHeaders(decision);
  if (decision.limited) {
    const { retryAfter } = decision.fields[decision.binding];
    const body =
      retryAfter >= 0 ? `rate limited: retry in ${retryAfter} s\n` : 'rate limited: this request exceeds the capacity\n';
    send(res, 429, headers, body);
    return;
  }
  // The request holds its leases while the application works and its
  // answer is sent; they go back once that is over, whichever way.
  const leases = decision.taken.filter((i) => LIMITS[i].isLease);
  if (leases.length > 0) whenOver(() => releaseLeases(keys, leases, leaseId));
  const answered = await answer(req, res, path);
  if (!answered) return;
  const { status, body } = answered;
  if (status >= 500 && REFUND_5XX) {
    // The request failed: it should not count. The headers keep the
    // numbers of the decision. The give-back has a deadline of its own.
    const deadline = Date.now() + TIMEOUT_MS;
    try {
      await withDeadline(
        limits.giveBack(redis, LIMITS, keys, decision.taken, 1, deadline),
        deadline,
        () => `no answer within ${TIMEOUT_MS} ms`,
      );
    } catch (err) {
      health.failed(err);
    }
  }
  send(res, status, headers, body);
}

const server = http.createServer((req, res) => {
  handle(req, res).catch((err) => {
    console.error(err);
    if (!res.headersSent) send(res, 500, {}, 'internal error\n');
  });
});

server.listen(PORT, HOST, () => {
  const { port } = server.address();
  const policy = LIMITS.map((l) => `${l.name} ${l.key} ${l.spec.join(' ')}`).join('; ');
  console.log(
    `listening on http://${HOST}:${port} (${policy}; redis ${REDIS_URL}${REDIS_CLUSTER ? ' cluster' : ''}; ` +
      `timeout ${TIMEOUT_MS} ms, failing ${FAIL_OPEN ? 'open' : 'closed'})`,
  );
});

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    server.close();
    redis.disconnect();
    process.exit(0);
  });
}
