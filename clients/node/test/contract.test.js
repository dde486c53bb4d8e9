// The middleware contract of docs/middleware.md through Express and Fastify
// over real HTTP on 127.0.0.1: the identity (the peer address unless a
// proxy is trusted), skipping, per-route limits in one RL.ALLOW, a
// handler's own header fields, a refused lease's result; and the client
// before it is ready: a cold start, a closed client, a restarted server.
'use strict';

const assert = require('node:assert/strict');
const { test, before, after } = require('node:test');
const http = require('node:http');
const crypto = require('node:crypto');
const { installedPackage, Server, raw, waitUntil } = require('./helpers');

const pkg = installedPackage();
const { RateLimiter, slide, lease, expressRateLimit, fastifyRateLimit, ioredisOptions, rateLimitHeaders } = pkg;
const Redis = require('ioredis');
const express = require('express');
const Fastify = require('fastify');

let server;
before(async () => {
  server = await Server.start();
});
after(async () => {
  if (server) await server.stop();
});

function get(port, path, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, headers, timeout: 5000 }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, raw: res.rawHeaders, body }));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('no answer')));
  });
}

// An app with the middleware on a free port; `extra(app)` adds routes.
async function app(kind, options, extra = () => {}) {
  if (kind === 'express') {
    const a = express();
    a.use(expressRateLimit(options));
    extra(a);
    a.get('/{*rest}', (_req, res) => res.send('ok\n'));
    const s = await new Promise((resolve) => {
      const h = a.listen(0, '127.0.0.1', () => resolve(h));
    });
    return { port: s.address().port, close: () => new Promise((r) => { s.closeAllConnections(); s.close(r); }) };
  }
  const f = Fastify();
  await f.register(fastifyRateLimit, options);
  extra(f);
  f.get('/*', async () => 'ok\n');
  await f.listen({ port: 0, host: '127.0.0.1' });
  return { port: f.server.address().port, close: () => f.close() };
}

function client(t, port = server.port) {
  const c = new Redis(port, '127.0.0.1', ioredisOptions(250));
  t.after(() => c.disconnect());
  return c;
}

const rand = () => crypto.randomBytes(6).toString('hex');

for (const kind of ['express', 'fastify']) {
  test(`${kind}: a caller cannot pick its own bucket`, async (t) => {
    const p = `rl:${kind}:${rand()}:`;
    const a = await app(kind, { client: client(t), log: () => {}, limits: [{ name: 'd', key: p + '$client', limit: slide(5, 60) }] });
    t.after(() => a.close());
    const statuses = [];
    for (let i = 0; i < 12; i++) statuses.push((await get(a.port, '/', { 'X-Client-Id': rand() })).status);
    assert.deepEqual(statuses, [...Array(5).fill(200), ...Array(7).fill(429)]);
    assert.equal(await raw(server.port, 'EXISTS', p + '127.0.0.1'), 1);
  });

  test(`${kind}: X-Forwarded-For and a client header count only from a trusted proxy`, async (t) => {
    const p = `rl:${kind}:${rand()}:`;
    const limits = [{ name: 'd', key: p + '$ip:$client', limit: slide(1, 60) }];
    const trusted = await app(kind, { client: client(t), limits, trustedProxies: ['127.0.0.0/8'], clientHeader: 'X-Client-Id' });
    t.after(() => trusted.close());
    const untrusted = await app(kind, { client: client(t), limits, trustedProxies: '10.0.0.0/8', clientHeader: 'X-Client-Id' });
    t.after(() => untrusted.close());
    const spoofed = { 'X-Forwarded-For': '6.6.6.6, 198.51.100.7', 'X-Client-Id': 'acme' };
    assert.equal((await get(trusted.port, '/', spoofed)).status, 200);
    assert.equal((await get(trusted.port, '/', spoofed)).status, 429);
    assert.equal(await raw(server.port, 'EXISTS', p + '198.51.100.7:acme'), 1);
    assert.equal((await get(untrusted.port, '/', spoofed)).status, 200);
    assert.equal(await raw(server.port, 'EXISTS', p + '127.0.0.1:127.0.0.1'), 1);
  });

  test(`${kind}: skip, and route limits decided with the global ones in one call`, async (t) => {
    const p = `rl:${kind}:${rand()}:`;
    const a = await app(kind, {
      client: client(t),
      limits: [{ name: 'global', key: p + 'g', limit: slide(3, 60) }],
      routes: [{ path: '/login', methods: ['GET'], limits: [{ name: 'login', key: p + 'login', limit: slide(1, 60) }] }],
      skip: (req) => req.url === '/health' || req.url.startsWith('/assets/'),
    });
    t.after(() => a.close());
    for (const path of ['/health', '/health', '/assets/app.js']) {
      const res = await get(a.port, path);
      assert.equal(res.status, 200);
      assert.equal(res.headers.ratelimit, undefined);
    }
    const first = await get(a.port, '/login');
    assert.equal(first.status, 200);
    assert.equal(first.headers['ratelimit-policy'], '"global";q=3;w=60, "login";q=1;w=60');
    const second = await get(a.port, '/login');
    assert.equal(second.status, 429);
    assert.match(second.headers.ratelimit, /^"login";r=0;/);
    // The refused /login spent nothing of the global limit.
    assert.equal((await get(a.port, '/')).headers['x-ratelimit-remaining'], '1');
    assert.equal((await get(a.port, '/')).headers['x-ratelimit-remaining'], '0');
    assert.equal((await get(a.port, '/')).status, 429);
  });

  test(`${kind}: a handler's own header field wins, none is sent twice`, async (t) => {
    const p = `rl:${kind}:${rand()}:`;
    const a = await app(kind, { client: client(t), limits: [{ name: 'd', key: p + 'k', limit: slide(10, 60) }] }, (x) => {
      x.get('/own', kind === 'express'
        ? (_req, res) => res.status(429).set({ RateLimit: '"own";r=0;t=9', 'Retry-After': '9' }).send('own\n')
        : async (_req, reply) => reply.code(429).headers({ RateLimit: '"own";r=0;t=9', 'Retry-After': '9' }).send('own\n'));
    });
    t.after(() => a.close());
    const res = await get(a.port, '/own');
    const names = res.raw.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());
    assert.equal(names.filter((n) => n === 'ratelimit').length, 1);
    assert.equal(names.filter((n) => n === 'retry-after').length, 1);
    assert.equal(res.headers.ratelimit, '"own";r=0;t=9');
    assert.equal(res.headers['x-ratelimit-limit'], '10');
  });
}

test('express: a limit on one route only (a route middleware)', async (t) => {
  const p = `rl:route:${rand()}:`;
  const a = express();
  const limitLogin = expressRateLimit({ client: client(t), limits: [{ name: 'login', key: p + '$ip', limit: slide(1, 60) }] });
  a.post('/login', limitLogin, (_req, res) => res.send('welcome\n'));
  a.get('/', (_req, res) => res.send('ok\n'));
  const s = await new Promise((resolve) => {
    const h = a.listen(0, '127.0.0.1', () => resolve(h));
  });
  t.after(() => new Promise((r) => { s.closeAllConnections(); s.close(r); }));
  const post = (path) => new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: s.address().port, path, method: 'POST' }, (res) => {
      res.resume();
      res.on('end', () => resolve(res));
    });
    req.on('error', reject);
    req.end();
  });
  assert.equal((await post('/login')).statusCode, 200);
  const refused = await post('/login');
  assert.equal(refused.statusCode, 429);
  assert.equal(refused.headers['retry-after'], '60');
  const free = await get(s.address().port, '/');
  assert.equal(free.status, 200);
  assert.equal(free.headers.ratelimit, undefined);
});

test('fastify: a limit on one route only (its onRequest hook)', async (t) => {
  const p = `rl:fhook:${rand()}:`;
  const f = Fastify();
  const onRequest = fastifyRateLimit.onRequest({ client: client(t), limits: [{ name: 'login', key: p + '$ip', limit: slide(1, 60) }] });
  f.get('/login', { onRequest }, async () => 'welcome\n');
  f.get('/', async () => 'ok\n');
  await f.listen({ port: 0, host: '127.0.0.1' });
  t.after(() => f.close());
  const port = f.server.address().port;
  assert.equal((await get(port, '/login')).status, 200);
  const refused = await get(port, '/login');
  assert.equal(refused.status, 429);
  assert.equal(refused.headers.ratelimit, '"login";r=0;t=60');
  assert.equal((await get(port, '/')).headers.ratelimit, undefined);
});

const ready = (c) => (c.status === 'ready' ? undefined : new Promise((r) => c.once('ready', r)));

test('a refused lease carries its result: its header fields, Retry-After its retry_after', async (t) => {
  const c = client(t);
  await ready(c);
  const limiter = new RateLimiter(c);
  const key = `rl:lease:${rand()}`;
  const limit = lease(1, 30);
  let release;
  const held = limiter.withLease(key, limit, () => new Promise((r) => (release = r)));
  await waitUntil('the lease held', async () => release !== undefined);
  const err = await limiter.withLease(key, limit, () => 'never').catch((e) => e);
  assert.ok(err instanceof pkg.LeaseRefusedError, String(err));
  assert.equal(err.result.limited, true);
  assert.equal(err.result.remaining, 0);
  assert.equal(err.retryAfter, err.result.retryAfter);
  const fields = rateLimitHeaders(err.result, { name: 'jobs', limit });
  assert.equal(fields['Retry-After'], String(err.result.retryAfter));
  assert.equal(fields['RateLimit-Policy'], '"jobs";q=1;qu="concurrent-requests"');
  release();
  await held;
});

test('a cold start: the first call waits for ioredis to be ready', async (t) => {
  const c = client(t);
  assert.notEqual(c.status, 'ready');
  const r = await new RateLimiter(c).slide(`rl:cold:${rand()}`, 2, 60);
  assert.equal(r.remaining, 1);
  // And through a middleware made on a client not yet ready.
  const a = await app('express', { client: client(t), log: () => {}, limits: [{ name: 'd', key: `rl:cold:${rand()}`, limit: slide(2, 60) }] });
  t.after(() => a.close());
  assert.equal((await get(a.port, '/')).status, 200);
});

test('a closed client: the package\'s NotConnectedError, not the client\'s own', async (t) => {
  const c = client(t);
  await ready(c);
  const limiter = new RateLimiter(c);
  await limiter.slide(`rl:closed:${rand()}`, 2, 60);
  c.disconnect();
  await waitUntil('the client closed', async () => c.status === 'end');
  const err = await limiter.slide(`rl:closed:${rand()}`, 2, 60).catch((e) => e);
  assert.ok(err instanceof pkg.NotConnectedError, String(err));
  assert.ok(err instanceof pkg.RateLimitError);
});

test('a restarted server: no call fails once it answers again', async (t) => {
  const s = await Server.start();
  t.after(() => s.stop());
  const lines = [];
  const a = await app('express', { client: client(t, s.port), log: (l) => lines.push(l), limits: [{ name: 'd', key: 'rl:restart:$ip', limit: slide(1000, 60) }] });
  t.after(() => a.close());
  const direct = new RateLimiter(client(t, s.port));
  assert.equal((await get(a.port, '/')).status, 200);
  await direct.slide('rl:restart:direct', 1000, 60);
  // Down long enough that ioredis waits 500 ms between its attempts: the
  // first requests find it waiting to reconnect to a server that answers.
  await s.restart(2000);
  for (let round = 0; round < 3; round++) {
    const answers = await Promise.all([1, 2, 3, 4, 5].map(() => get(a.port, '/')));
    assert.deepEqual(answers.map((r) => r.status), [200, 200, 200, 200, 200]);
    assert.equal((await direct.slide('rl:restart:direct', 1000, 60)).limited, false);
  }
  assert.deepEqual(lines, []);
});
