// An Express app rate limited by the redis-ratelimit package: per client
// (the peer address; behind a proxy listed in RL_TRUSTED_PROXIES the
// X-Forwarded-For address, or the RL_CLIENT_HEADER header it sets) 2
// requests per second and 30 per minute, and at most 2 in flight; every
// response but /health's carries the RateLimit header fields. Redis
// failing: 503 within RL_TIMEOUT_MS.
//
//   REDIS_URL=redis://127.0.0.1:6379 PORT=8080 node app.js
//   RL_TRUSTED_PROXIES=127.0.0.1,10.0.0.0/8 RL_CLIENT_HEADER=X-Client-Id ...
//
// Routes: / answers ok; /status/<code> that status (a 5xx gives the units
// back); /slow/<ms> after that many milliseconds (holding a slot).
'use strict';

const express = require('express');
const Redis = require('ioredis');
const { expressRateLimit, ioredisOptions, lease, slice, slide } = require('redis-ratelimit');

const env = process.env;
const timeoutMs = Number(env.RL_TIMEOUT_MS || 250);
const redis = new Redis(env.REDIS_URL || 'redis://127.0.0.1:6379', ioredisOptions(timeoutMs));

const app = express();
app.use(
  expressRateLimit({
    client: redis,
    limits: [
      { name: 'second', key: 'rl:{user:$client}:s', limit: slide(2, 1) },
      { name: 'minute', key: 'rl:{user:$client}:m', limit: slice(30, 60, 12) },
      { name: 'inflight', key: 'rl:{user:$client}:c', limit: lease(2, 60) },
    ],
    trustedProxies: env.RL_TRUSTED_PROXIES || [],
    clientHeader: env.RL_CLIENT_HEADER || undefined,
    skip: (req) => req.url === '/health',
    timeoutMs,
    failOpen: env.RL_FAIL_OPEN === 'yes',
    refund5xx: true,
  }),
);
app.get('/', (_req, res) => res.send('ok\n'));
app.get('/health', (_req, res) => res.send('ok\n'));
app.get('/status/:code', (req, res) => res.status(Number(req.params.code)).send('status\n'));
app.get('/slow/:ms', (req, res) => {
  const timer = setTimeout(() => res.send('waited\n'), Math.min(Number(req.params.ms), 60000));
  res.on('close', () => clearTimeout(timer));
});

const server = app.listen(Number(env.PORT ?? 8080), env.HOST || '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}`);
});
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    server.close();
    redis.disconnect();
    process.exit(0);
  });
}
