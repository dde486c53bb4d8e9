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
// When Redis fails: the limiter's answer takes at most RL_TIMEOUT_MS (250
// ms), counted from the request's start, connection attempts included: the
// client connects with that timeout, queues no command while disconnected
// (a request waits for a connection attempt under way, up to its
// deadline), resends none after a reconnection, and every command times out
// at the request's deadline. A request the limiter could not decide gets
// 503 (failing closed, the default), or with RL_FAIL_OPEN=yes goes to the
// application without a limit and without rate limit fields. The log has
// one line when the limiter starts failing and one when it answers again,
// never one per request (nor one per reconnection attempt).
//
// The application behind the limiter is a stand-in: it answers 200, or for
// a path /status/<code> that status (to see a failed request given back).
//
// Configuration (environment):
//   REDIS_URL        redis://127.0.0.1:6379 (with REDIS_CLUSTER=yes: any node)
//   REDIS_CLUSTER    no    yes: a Redis Cluster client; implies RL_GROUP_BY_SLOT
//   HOST, PORT       127.0.0.1, 8080
//   RL_LIMITS        the policy: `name key ALGORITHM numbers...` entries
//                    separated by `;`, the spec as in RL.ALLOW, times in
//                    seconds; the key may name $client (the X-Client-Id
//                    header, or else the peer address), $ip, $path, $method.
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
function decide(keys, started) {
  const deadline = started + TIMEOUT_MS;
  const decision = connected(deadline).then(() =>
    limits.allow(redis, LIMITS, keys, { groupBySlot: GROUP_BY_SLOT, deadline }),
  );
  return withDeadline(decision, deadline, () => `no answer within ${TIMEOUT_MS} ms`);
}

// The rate limit fields of a decision (see the top of this file).
function rateLimitHeaders(decision) {
  const f = decision.fields[decision.binding];
  // RateLimit's t: no more than r units within t seconds. On a 429 that is
  // the Retry-After (the draft: Retry-After is not earlier than the end of
  // t); otherwise the time until the limiter is full again.
  const t = decision.limited && f.retryAfter >= 0 ? f.retryAfter : f.resetAfter;
  const headers = {
    'RateLimit-Policy': LIMITS.map((limit, i) => `${NAMES[i]};q=${decision.fields[i].limit};w=${limit.window}`).join(
      ', ',
    ),
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

// The stand-in for the service: { status, body }.
function application(method, path) {
  const m = /^\/status\/([0-9]+)$/.exec(path);
  const status = m ? Number(m[1]) : 200;
  if (m && status >= 200 && status <= 599) return { status, body: `status ${status}\n` };
  return { status: 200, body: 'ok\n' };
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
  const path = req.url.split('?')[0];
  const ip = req.socket.remoteAddress;
  const values = { client: req.headers['x-client-id'] || ip, ip, path, method: req.method };
  const keys = LIMITS.map((limit) => limit.render(values));
  let decision;
  try {
    decision = await decide(keys, started);
  } catch (err) {
    health.failed(err);
    if (!FAIL_OPEN) {
      send(res, 503, {}, 'rate limiter unavailable\n');
      return;
    }
    // Fail open: the application answers, unlimited; no rate limit fields,
    // since there are no numbers to put in them.
    const { status, body } = application(req.method, path);
    send(res, status, {}, body);
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
  const { status, body } = application(req.method, path);
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
