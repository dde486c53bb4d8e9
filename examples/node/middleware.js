// A minimal HTTP server (node's http module, no framework) that rate limits
// every request, whatever its path and method, with RL.THROTTLE through
// ioredis. (A method name that node's HTTP parser does not know is refused
// by node itself with 400, before any handler runs.)
//
// Each request costs one unit of the caller's limiter,
// RL.THROTTLE <prefix><client> <max_burst> <count> <period>, where the client
// is the X-Client-Id header or else the peer address. Allowed requests get
// 200, limited ones 429 with Retry-After. Every response carries the rate
// limit fields of draft-ietf-httpapi-ratelimit-headers-10 (the syntax of
// drafts -08 to -10):
//
//   RateLimit-Policy: "default";q=<limit>;w=<period>
//   RateLimit: "default";r=<remaining>;t=<reset_after>
//
// Configuration (environment):
//   REDIS_URL      redis://127.0.0.1:6379
//   HOST, PORT     127.0.0.1, 8080
//   RL_MAX_BURST   9     } 10 requests per 60 s, in bursts of up to 10
//   RL_COUNT       10    }   (capacity = max_burst + 1)
//   RL_PERIOD      60    }
//   RL_KEY_PREFIX  rl:http:
//   RL_POLICY      default   (the policy name in both fields)
'use strict';

const http = require('http');
const Redis = require('ioredis');

const env = process.env;
const REDIS_URL = env.REDIS_URL || 'redis://127.0.0.1:6379';
const HOST = env.HOST || '127.0.0.1';
const PORT = Number(env.PORT || 8080);
const MAX_BURST = Number(env.RL_MAX_BURST || 9);
const COUNT = Number(env.RL_COUNT || 10);
const PERIOD = Number(env.RL_PERIOD || 60);
const KEY_PREFIX = env.RL_KEY_PREFIX || 'rl:http:';
const POLICY = env.RL_POLICY || 'default';

// A Structured Field String (RFC 9651): quoted, with \ and " escaped.
function sfString(value) {
  if (!/^[\x20-\x7e]*$/.test(value)) {
    throw new Error(`not a printable ASCII string: ${JSON.stringify(value)}`);
  }
  return '"' + value.replace(/[\\"]/g, (c) => '\\' + c) + '"';
}
const POLICY_NAME = sfString(POLICY);

const redis = new Redis(REDIS_URL);

// The five fields of RL.THROTTLE for one request of this client.
async function throttle(clientId) {
  const reply = await redis.call('RL.THROTTLE', KEY_PREFIX + clientId, MAX_BURST, COUNT, PERIOD);
  const [limited, limit, remaining, retryAfter, resetAfter] = reply.map(Number);
  return { limited, limit, remaining, retryAfter, resetAfter };
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
  const clientId = req.headers['x-client-id'] || req.socket.remoteAddress;
  let r;
  try {
    r = await throttle(clientId);
  } catch (err) {
    // Fail closed; a real service might rather fail open.
    send(res, 503, {}, `rate limiter unavailable: ${err.message}\n`);
    return;
  }
  const headers = {
    'RateLimit-Policy': `${POLICY_NAME};q=${r.limit};w=${PERIOD}`,
    RateLimit: `${POLICY_NAME};r=${r.remaining};t=${r.resetAfter}`,
  };
  if (!r.limited) {
    send(res, 200, headers, 'ok\n');
    return;
  }
  // retryAfter is -1 only when the request can never fit (a cost above the
  // capacity); then there is nothing to wait for.
  if (r.retryAfter >= 0) {
    headers['Retry-After'] = String(r.retryAfter);
    send(res, 429, headers, `rate limited: retry in ${r.retryAfter} s\n`);
  } else {
    send(res, 429, headers, 'rate limited: this request exceeds the capacity\n');
  }
}

const server = http.createServer((req, res) => {
  handle(req, res).catch((err) => {
    console.error(err);
    if (!res.headersSent) send(res, 500, {}, 'internal error\n');
  });
});

server.listen(PORT, HOST, () => {
  const { port } = server.address();
  console.log(
    `listening on http://${HOST}:${port} (${COUNT} per ${PERIOD} s, burst ${MAX_BURST}, redis ${REDIS_URL})`,
  );
});

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    server.close();
    redis.disconnect();
    process.exit(0);
  });
}
