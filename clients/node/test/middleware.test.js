// The Express middleware and the Fastify plugin over real HTTP on
// 127.0.0.1: headers, several limits, give-back on 5xx, leases released at
// the response's end or the client's disconnect (on the module, and on the
// Lua backend that 'auto' chooses on a server without it), and Redis
// failing (killed, SIGSTOP, not accepting): every request answered within
// the timeout, one log line per outage.
'use strict';

const assert = require('node:assert/strict');
const { test, before, after } = require('node:test');
const http = require('node:http');
const { spawn } = require('node:child_process');
const { installedPackage, Server, raw, sleep, waitUntil, freePort } = require('./helpers');

const { throttle, slide, lease, slice, expressRateLimit, fastifyRateLimit, ioredisOptions, executeLua } = installedPackage();
const Redis = require('ioredis');
const express = require('express');
const Fastify = require('fastify');

// The module's server, and one without the module (the Lua backend's).
let server;
let bare;
before(async () => {
  server = await Server.start();
  bare = await Server.start({ withModule: false });
});
after(async () => {
  if (server) await server.stop();
  if (bare) await bare.stop();
});

const RL_FIELDS = ['ratelimit-policy', 'ratelimit', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'retry-after'];

function get(port, path, { id = 'alice', timeout = 5000 } = {}) {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const req = http.get({ host: '127.0.0.1', port, path, headers: { 'X-Client-Id': id }, timeout }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => {
        const fields = {};
        for (const f of RL_FIELDS) if (res.headers[f] !== undefined) fields[f] = res.headers[f];
        resolve({ status: res.statusCode, fields, body, ms: Date.now() - started });
      });
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('no answer')));
  });
}

function routes(app) {
  app.get('/', (_req, res) => res.send('ok\n'));
  app.get('/status/:code', (req, res) => res.status(Number(req.params.code)).send('status\n'));
  app.get('/slow/:ms', (req, res) => {
    const timer = setTimeout(() => res.send('waited\n'), Number(req.params.ms));
    res.on('close', () => clearTimeout(timer));
  });
}

// An app with the middleware (express or fastify) on a free port.
// The tests' clients name themselves in X-Client-Id, believed from 127.0.0.1.
async function app(kind, options) {
  const lines = [];
  const log = (line) => lines.push(line);
  options = { trustedProxies: ['127.0.0.1'], clientHeader: 'X-Client-Id', ...options };
  if (kind === 'express') {
    const a = express();
    a.use(expressRateLimit({ log, ...options }));
    routes(a);
    const s = await new Promise((resolve) => {
      const h = a.listen(0, '127.0.0.1', () => resolve(h));
    });
    return { port: s.address().port, lines, close: () => new Promise((r) => { s.closeAllConnections(); s.close(r); }) };
  }
  const f = Fastify();
  await f.register(fastifyRateLimit, { log, ...options });
  f.get('/', async () => 'ok\n');
  f.get('/status/:code', async (req, reply) => reply.code(Number(req.params.code)).send('status\n'));
  f.get('/slow/:ms', (req, reply) => {
    const timer = setTimeout(() => reply.send('waited\n'), Number(req.params.ms));
    reply.raw.on('close', () => clearTimeout(timer));
  });
  await f.listen({ port: 0, host: '127.0.0.1' });
  return { port: f.server.address().port, lines, close: () => f.close() };
}

for (const kind of ['express', 'fastify']) for (const backend of ['module', 'lua']) {
  test(`${kind}, ${backend} backend: one limit, the README's headers`, async (t) => {
    const client = new Redis((backend === 'module' ? server : bare).port, '127.0.0.1', ioredisOptions(250));
    t.after(() => client.disconnect());
    const a = await app(kind, { client, limits: [{ name: 'default', key: `rl:${kind}:$client`, limit: throttle(2, 1, 60) }] });
    t.after(() => a.close());
    const want = [[200, 2, 60, 60], [200, 1, 120, 120], [200, 0, 180, 180]];
    for (const [status, r, tt, reset] of want) {
      const res = await get(a.port, '/');
      assert.equal(res.status, status);
      assert.deepEqual(res.fields, {
        'ratelimit-policy': '"default";q=3;w=180', ratelimit: `"default";r=${r};t=${tt}`,
        'x-ratelimit-limit': '3', 'x-ratelimit-remaining': String(r), 'x-ratelimit-reset': String(reset),
      });
    }
    const res = await get(a.port, '/');
    assert.equal(res.status, 429);
    assert.deepEqual(res.fields, {
      'ratelimit-policy': '"default";q=3;w=180', ratelimit: '"default";r=0;t=60', 'x-ratelimit-limit': '3',
      'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '180', 'retry-after': '60',
    });
    assert.deepEqual(a.lines, []);
  });

  test(`${kind}, ${backend} backend: several limits, grouped by slot, give-back on 5xx, leases`, async (t) => {
    const srv = backend === 'module' ? server : bare;
    const client = new Redis(srv.port, '127.0.0.1', ioredisOptions(250));
    t.after(() => client.disconnect());
    const inspect = (key) => backend === 'module' ? raw(srv.port, 'RL.INSPECT', key) : executeLua(client, ['RL.INSPECT', key]);
    const p = `rl:${kind}:many:`;
    const limits = [
      { name: 'second', key: p + '{user:$client}:s', limit: slide(10, 60) },
      { name: 'inflight', key: p + '{user:$client}:c', limit: lease(2, 60) },
      { name: 'ip', key: p + 'ip:$ip', limit: slice(100, 60, 6) },
    ];
    const a = await app(kind, { client, limits, groupBySlot: true, refund5xx: true });
    t.after(() => a.close());
    // A 5xx gives its units back.
    const failed = await get(a.port, '/status/500');
    assert.equal(failed.status, 500);
    assert.match(failed.fields['ratelimit-policy'], /^"second";q=10;w=60, "inflight";q=2;qu="concurrent-requests", "ip";q=100;w=60$/);
    await waitUntil('the give-back', async () => (await raw(srv.port, 'EXISTS', p + '{user:alice}:s')) === 0);
    await waitUntil('the lease released', async () => (await raw(srv.port, 'EXISTS', p + '{user:alice}:c')) === 0);
    // Two slow requests hold both slots: a third is refused by the lease limit, takes nothing.
    const slow = [get(a.port, '/slow/1500', { id: 'bob' }), get(a.port, '/slow/1500', { id: 'bob' })];
    await waitUntil('two leases held', async () => {
      const state = await inspect(p + '{user:bob}:c');
      return state && state[state.indexOf('held') + 1] === 2;
    });
    const third = await get(a.port, '/', { id: 'carol' });
    assert.equal(third.status, 200); // another client
    const refused = await get(a.port, '/', { id: 'bob' });
    assert.equal(refused.status, 429);
    assert.match(refused.fields.ratelimit, /^"inflight";r=0;t=/);
    assert.deepEqual((await Promise.all(slow)).map((r) => r.status), [200, 200]);
    await waitUntil('the leases released', async () => (await raw(srv.port, 'EXISTS', p + '{user:bob}:c')) === 0);
    // The refused request took no rate unit: bob's two slow ones did.
    const units = await inspect(p + '{user:bob}:s');
    assert.equal(units[units.indexOf('units') + 1], 2);
    // A client that goes away gives its slot back.
    await new Promise((resolve) => {
      const req = http.get({ host: '127.0.0.1', port: a.port, path: '/slow/10000', headers: { 'X-Client-Id': 'dave' } });
      req.on('error', () => {});
      setTimeout(() => {
        req.destroy();
        resolve();
      }, 300);
    });
    await waitUntil('the lease of a client gone', async () => (await raw(srv.port, 'EXISTS', p + '{user:dave}:c')) === 0);
    assert.deepEqual(a.lines, []);
  });
}

test('express with a node-redis client: the same headers', async (t) => {
  const { createClient } = require('redis');
  const client = createClient({ url: server.url, disableOfflineQueue: true });
  await client.connect();
  t.after(() => client.destroy ? client.destroy() : client.disconnect());
  const a = await app('express', { client, limits: [{ name: 'default', key: 'rl:node-redis:$client', limit: throttle(2, 1, 60) }] });
  t.after(() => a.close());
  for (const r of [2, 1, 0]) assert.equal((await get(a.port, '/')).fields.ratelimit, `"default";r=${r};t=${(3 - r) * 60}`);
  const res = await get(a.port, '/');
  assert.equal(res.status, 429);
  assert.equal(res.fields['retry-after'], '60');
  assert.deepEqual(a.lines, []);
});

test('a WRONGTYPE reply is logged as a configuration error, not an outage', async (t) => {
  const client = new Redis(server.port, '127.0.0.1', ioredisOptions(250));
  t.after(() => client.disconnect());
  await raw(server.port, 'SET', 'rl:string:alice', 'x');
  const a = await app('express', { client, limits: [{ name: 'default', key: 'rl:string:$client', limit: throttle(2, 1, 60) }] });
  t.after(() => a.close());
  for (let i = 0; i < 3; i++) assert.equal((await get(a.port, '/')).status, 500);
  assert.equal(a.lines.length, 1);
  assert.match(a.lines[0], /^rate limiter configuration error \(WrongTypeError: WRONGTYPE .*\): not an outage, the policy or its keys must be fixed; answering 500 meanwhile$/);
});

// Five requests at once, each answered within 2 s with `status`.
async function burst(a, status) {
  const answers = await Promise.all([1, 2, 3, 4, 5].map(() => get(a.port, '/', { timeout: 3000 })));
  for (const r of answers) {
    assert.equal(r.status, status);
    assert.ok(r.ms < 2000, `answered in ${r.ms} ms`);
    assert.deepEqual(r.fields, {});
  }
}

test('Redis killed, stopped (SIGSTOP) or not accepting: answered within the timeout, one log line', async (t) => {
  // Killed: connections refused; failing closed, then open.
  for (const failOpen of [false, true]) {
    const s = await Server.start();
    const client = new Redis(s.port, '127.0.0.1', ioredisOptions(200));
    const a = await app('express', { client, timeoutMs: 200, failOpen, limits: [{ name: 'd', key: 'rl:k:$client', limit: throttle(9, 10, 60) }] });
    assert.equal((await get(a.port, '/')).status, 200);
    await s.stop();
    await burst(a, failOpen ? 200 : 503);
    await burst(a, failOpen ? 200 : 503);
    assert.equal(a.lines.length, 1, a.lines.join('\n'));
    assert.match(a.lines[0], failOpen ? /^rate limiter unavailable .*letting requests through/ : /^rate limiter unavailable .*answering 503/);
    client.disconnect();
    await a.close();
  }
  // Stopped: connected, no answer; then SIGCONT, and the next request passes.
  {
    const s = await Server.start();
    t.after(() => s.stop());
    const client = new Redis(s.port, '127.0.0.1', ioredisOptions(200));
    t.after(() => client.disconnect());
    const a = await app('fastify', { client, timeoutMs: 200, limits: [{ name: 'd', key: 'rl:k:$client', limit: throttle(9, 10, 60) }] });
    t.after(() => a.close());
    assert.equal((await get(a.port, '/')).status, 200);
    s.signal('SIGSTOP');
    await burst(a, 503);
    s.signal('SIGCONT');
    await waitUntil('a request allowed again', async () => (await get(a.port, '/')).status === 200);
    assert.equal(a.lines.length, 2, a.lines.join('\n'));
    assert.match(a.lines[1], /^rate limiter available again, after \d+ failed calls in/);
  }
  // Not accepting: a listener whose accept queue is full (python3: listen(0), never accept).
  {
    const port = await freePort();
    const code = `import socket,time\ns=socket.socket();s.bind(('127.0.0.1',${port}));s.listen(0)\n` +
      `c=[socket.create_connection(('127.0.0.1',${port})) for _ in range(2)] if False else []\nprint('ready',flush=True)\ntime.sleep(60)`;
    const py = spawn('python3', ['-c', code], { stdio: ['ignore', 'pipe', 'inherit'] });
    t.after(() => py.kill('SIGKILL'));
    await new Promise((r) => py.stdout.once('data', r));
    // Fill the queue from here: these connections are never accepted.
    const fillers = [];
    for (let i = 0; i < 4; i++) {
      const net = require('node:net');
      const c = net.connect(port, '127.0.0.1');
      c.on('error', () => {});
      fillers.push(c);
    }
    t.after(() => fillers.forEach((c) => c.destroy()));
    await sleep(100);
    const client = new Redis(port, '127.0.0.1', ioredisOptions(200));
    client.on('error', () => {});
    t.after(() => client.disconnect());
    const a = await app('express', { client, timeoutMs: 200, limits: [{ name: 'd', key: 'rl:k:$client', limit: throttle(9, 10, 60) }] });
    t.after(() => a.close());
    await burst(a, 503);
    await burst(a, 503);
    assert.equal(a.lines.length, 1, a.lines.join('\n'));
  }
});
