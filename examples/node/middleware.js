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

const redis = REDIS_CLUSTER ? new Redis.Cluster([REDIS_URL]) : new Redis(REDIS_URL);

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
  req.resume(); // the body is not used: drop it
  const path = req.url.split('?')[0];
  const ip = req.socket.remoteAddress;
  const values = { client: req.headers['x-client-id'] || ip, ip, path, method: req.method };
  const keys = LIMITS.map((limit) => limit.render(values));
  let decision;
  try {
    decision = await limits.allow(redis, LIMITS, keys, { groupBySlot: GROUP_BY_SLOT });
  } catch (err) {
    // Fail closed; a real service might rather fail open.
    send(res, 503, {}, `rate limiter unavailable: ${err.message}\n`);
    return;
  }
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
    // numbers of the decision.
    try {
      await limits.giveBack(redis, LIMITS, keys, decision.taken);
    } catch (err) {
      console.error(`could not give the units back: ${err.message}`);
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
    `listening on http://${HOST}:${port} (${policy}; redis ${REDIS_URL}${REDIS_CLUSTER ? ' cluster' : ''})`,
  );
});

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    server.close();
    redis.disconnect();
    process.exit(0);
  });
}
