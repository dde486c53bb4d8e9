// The recipes of clients/node/README.md, each an Express app made on an
// ioredis client, run by clients/node/test/example.test.js. The README
// shows the text between each `// [name]` and `// [/name]` marker.
'use strict';

const express = require('express');
const { RateLimiter, LeaseRefusedError, expressRateLimit, lease, rateLimitHeaders, slide } = require('redis-ratelimit');

function namedLimits(redis) {
  const app = express();
  // [named]
  app.use(expressRateLimit({ client: redis, limits: [
    { name: 'per-second', key: 'rl:{user:$client}:s', limit: slide(10, 1) },
    { name: 'per-hour', key: 'rl:{user:$client}:h', limit: slide(1000, 3600) },
  ] }));
  // RateLimit-Policy: "per-second";q=10;w=1, "per-hour";q=1000;w=3600
  // RateLimit: "per-second";r=9;t=1   (the binding limit, by its name)
  // [/named]
  app.get('/', (_req, res) => res.send('ok\n'));
  return app;
}

function oneRoute(redis) {
  const app = express();
  // [one-route]
  // One RL.ALLOW per request: a refused POST /login spends nothing of 'default'.
  app.use(expressRateLimit({
    client: redis,
    limits: [{ name: 'default', key: 'rl:$client', limit: slide(100, 60) }],
    routes: [{ path: '/login', methods: ['POST'], limits: [{ name: 'login', key: 'rl:login:$client', limit: slide(5, 60) }] }],
  }));

  // Or, without a global middleware, on the route alone:
  const limitExport = expressRateLimit({ client: redis, limits: [{ name: 'export', key: 'rl:export:$client', limit: slide(1, 60) }] });
  app.get('/export', limitExport, (_req, res) => res.send('exported\n'));
  // [/one-route]
  app.post('/login', (_req, res) => res.send('welcome\n'));
  return app;
}

function exempt(redis) {
  const app = express();
  // [exempt]
  const exempted = (req) => ['/health', '/docs'].includes(req.url) || req.url.startsWith('/static/');
  app.use(expressRateLimit({ client: redis, skip: exempted, limits: [{ name: 'default', key: 'rl:$client', limit: slide(100, 60) }] }));
  // [/exempt]
  app.get('/health', (_req, res) => res.send('ok\n'));
  return app;
}

function behindAProxy(redis) {
  const app = express();
  // [proxy]
  // $client and $ip are the peer address unless the peer is a trusted proxy:
  // then $ip is the rightmost X-Forwarded-For address that is not one, and
  // $client the X-Client-Id header the proxy sets (or else $ip). Express's
  // own `trust proxy` setting is not read: name the proxies here.
  app.use(expressRateLimit({
    client: redis,
    trustedProxies: ['10.0.0.0/8', '127.0.0.1'],
    clientHeader: 'X-Client-Id',
    limits: [{ name: 'default', key: 'rl:$client', limit: slide(100, 60) }],
  }));
  // [/proxy]
  app.get('/', (_req, res) => res.send('ok\n'));
  return app;
}

function refusedLease(redis, runExport) {
  const app = express();
  // [lease-429]
  const limiter = new RateLimiter(redis);
  const exports = lease(2, 300); // 2 exports at once per tenant, leases of 300 s

  app.post('/tenants/:tenant/export', async (req, res) => {
    const key = `rl:{tenant:${req.params.tenant}}:exports`;
    try {
      res.send(await limiter.withLease(key, exports, () => runExport(req.params.tenant)));
    } catch (err) {
      if (!(err instanceof LeaseRefusedError)) throw err;
      // Retry-After is the lease's retry_after (when enough leases expire
      // if none is released), from the refusal's own result.
      res.status(429).set(rateLimitHeaders(err.result, { name: 'exports', limit: exports })).send('2 exports already running\n');
    }
  });
  // [/lease-429]
  return app;
}

module.exports = { namedLimits, oneRoute, exempt, behindAProxy, refusedLease };
