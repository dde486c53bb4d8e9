// examples/node/app.js, the Express example, run for real against a server.
'use strict';

const assert = require('node:assert/strict');
const { test } = require('node:test');
const { spawn } = require('node:child_process');
const http = require('node:http');
const path = require('node:path');
const fs = require('node:fs');
const Redis = require('ioredis');
const { ROOT, Server, installedPackage, raw, waitUntil, freePort } = require('./helpers');

const { ioredisOptions } = installedPackage();

function get(port, p, id) {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: p, headers: { 'X-Client-Id': id } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res));
    }).on('error', reject);
  });
}

test('examples/node/app.js: limits, headers, leases released', async (t) => {
  const server = await Server.start();
  t.after(() => server.stop());
  const app = spawn(process.execPath, [path.join(ROOT, 'examples/node/app.js')], {
    env: { ...process.env, REDIS_URL: server.url, PORT: '0', RL_TRUSTED_PROXIES: '127.0.0.1', RL_CLIENT_HEADER: 'X-Client-Id' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.after(() => app.kill('SIGKILL'));
  const port = await new Promise((resolve, reject) => {
    app.stdout.on('data', (d) => {
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(String(d));
      if (m) resolve(Number(m[1]));
    });
    app.once('exit', (code) => reject(new Error(`app.js exited (${code})`)));
  });
  const first = await get(port, '/', 'alice');
  assert.equal(first.statusCode, 200);
  assert.equal(first.headers['ratelimit-policy'],
    '"second";q=2;w=1, "minute";q=30;w=60, "inflight";q=2;qu="concurrent-requests"');
  assert.equal(first.headers.ratelimit, '"inflight";r=1;t=60'); // ties on r=1: the longer reset binds
  assert.equal((await get(port, '/', 'alice')).statusCode, 200);
  const third = await get(port, '/', 'alice');
  assert.equal(third.statusCode, 429);
  assert.equal(third.headers['retry-after'], '1');
  await waitUntil('the leases released', async () => (await raw(server.port, 'EXISTS', 'rl:{user:alice}:c')) === 0);
  const failed = await get(port, '/status/503', 'bob');
  assert.equal(failed.statusCode, 503);
  await waitUntil('the 5xx given back', async () => (await raw(server.port, 'EXISTS', 'rl:{user:bob}:s')) === 0);
  const health = await get(port, '/health', 'alice');
  assert.equal(health.statusCode, 200);
  assert.equal(health.headers.ratelimit, undefined);
});

// --- the README's recipes (examples/node/recipes.js, complete.js) -------

function dedent(text) {
  const lines = text.split('\n');
  const indent = Math.min(...lines.filter((l) => l.trim()).map((l) => l.match(/^ */)[0].length));
  return lines.map((l) => l.slice(indent)).join('\n');
}

function marked(file) {
  const text = fs.readFileSync(path.join(ROOT, 'examples/node', file), 'utf8');
  return [...text.matchAll(/\/\/ \[([a-z0-9-]+)\]\n([\s\S]*?)\n *\/\/ \[\/\1\]/g)].map((m) => [m[1], dedent(m[2])]);
}

test('the README shows the recipes as they are tested', () => {
  const readme = fs.readFileSync(path.join(ROOT, 'clients/node/README.md'), 'utf8');
  const found = [...marked('complete.js'), ...marked('recipes.js')];
  assert.deepEqual(found.map(([n]) => n), ['complete', 'named', 'one-route', 'exempt', 'proxy', 'lease-429']);
  for (const [name, body] of found) assert.ok(readme.includes(body), `the README's ${name} recipe differs`);
});

function request(port, method, p, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: p, method, headers }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function serve(t, app) {
  const s = await new Promise((resolve) => {
    const h = app.listen(0, '127.0.0.1', () => resolve(h));
  });
  t.after(() => new Promise((r) => { s.closeAllConnections(); s.close(r); }));
  return s.address().port;
}

test('recipes: complete, named, one route, exempt, behind a proxy, a 429 from a refused lease', async (t) => {
  const server = await Server.start();
  t.after(() => server.stop());
  const recipes = require(path.join(ROOT, 'examples/node/recipes.js'));
  const redis = new Redis(server.port, '127.0.0.1', ioredisOptions(250));
  t.after(() => redis.disconnect());

  // The complete snippet, run as a program.
  const port = await freePort();
  const app = spawn(process.execPath, [path.join(ROOT, 'examples/node/complete.js')], {
    env: { ...process.env, REDIS_URL: server.url, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  t.after(() => app.kill('SIGKILL'));
  let first;
  await waitUntil('complete.js listening', async () => (first = await request(port, 'GET', '/').catch(() => null)) !== null);
  assert.equal(first.status, 200);
  assert.equal(first.headers['ratelimit-policy'], '"minute";q=100;w=60, "inflight";q=2;qu="concurrent-requests"');
  assert.equal(await raw(server.port, 'EXISTS', 'rl:{user:127.0.0.1}:m'), 1);

  const named = await serve(t, recipes.namedLimits(redis));
  const n = await request(named, 'GET', '/');
  assert.equal(n.headers['ratelimit-policy'], '"per-second";q=10;w=1, "per-hour";q=1000;w=3600');
  assert.equal(n.headers.ratelimit, '"per-second";r=9;t=1');

  const one = await serve(t, recipes.oneRoute(redis));
  const logins = [];
  for (let i = 0; i < 6; i++) logins.push((await request(one, 'POST', '/login')).status);
  assert.deepEqual(logins, [200, 200, 200, 200, 200, 429]);
  assert.equal((await request(one, 'GET', '/export')).status, 200);
  assert.equal((await request(one, 'GET', '/export')).status, 429);
  // 5 logins and 2 exports spent 'default'; the refused login did not.
  const state = await raw(server.port, 'RL.INSPECT', 'rl:127.0.0.1');
  assert.equal(state[state.indexOf('units') + 1], 7);

  const ex = await serve(t, recipes.exempt(redis));
  for (const p of ['/health', '/health']) {
    const r = await request(ex, 'GET', p);
    assert.equal(r.status, 200);
    assert.equal(r.headers.ratelimit, undefined);
  }

  const proxy = await serve(t, recipes.behindAProxy(redis));
  await request(proxy, 'GET', '/', { 'X-Forwarded-For': '6.6.6.6, 198.51.100.7' });
  await request(proxy, 'GET', '/', { 'X-Client-Id': 'acme' });
  assert.equal(await raw(server.port, 'EXISTS', 'rl:198.51.100.7'), 1);
  assert.equal(await raw(server.port, 'EXISTS', 'rl:acme'), 1);

  const leased = await serve(t, recipes.refusedLease(redis, async (tenant) => `export of ${tenant}\n`));
  const ok = await request(leased, 'POST', '/tenants/acme/export');
  assert.deepEqual([ok.status, ok.body], [200, 'export of acme\n']);
  await raw(server.port, 'RL.LEASE', 'rl:{tenant:acme}:exports', 2, 300, 'job-1');
  await raw(server.port, 'RL.LEASE', 'rl:{tenant:acme}:exports', 2, 300, 'job-2');
  const refused = await request(leased, 'POST', '/tenants/acme/export');
  assert.equal(refused.status, 429);
  assert.equal(refused.headers['ratelimit-policy'], '"exports";q=2;qu="concurrent-requests"');
  const retry = Number(refused.headers['retry-after']);
  assert.ok(retry >= 295 && retry <= 300, `Retry-After ${retry}: the leases' own expiry`);
});

// --- examples/node/llm.js and pacing.js (round 5: UNITS, settle, acquire) ---

for (const backend of ['module', 'lua']) {
  test(`examples/node/llm.js: one RL.ALLOW with UNITS, settled with the usage (${backend})`, async (t) => {
    const server = await Server.start({ withModule: backend === 'module' });
    t.after(() => server.stop());
    const redis = new Redis(server.port, '127.0.0.1');
    t.after(() => redis.disconnect());
    const { RateLimiter, throttle, lease } = installedPackage();
    const limiter = new RateLimiter(redis);
    assert.equal((await limiter.backend()).kind, backend);
    const { complete, estimateTokens } = require(path.join(ROOT, 'examples/node/llm.js'));
    const prompt = 'x'.repeat(400);
    assert.equal(estimateTokens(prompt, 1000), 1100);
    const before = Date.now();
    const out = await complete(limiter, 'alice', prompt, async () => ({ text: 'hi', usage: { totalTokens: 1300 } }));
    assert.deepEqual(out, { text: 'hi', usage: { totalTokens: 1300 } });
    const peek = await limiter.peek([
      ['llm:{alice}:inflight', lease(4, 120)],
      ['llm:{alice}:rpm', throttle(60, 60, 60)],
      ['llm:{alice}:tpm', throttle(100000, 100000, 60)],
    ], { quantity: 0, id: 'p' });
    // The lease released, one request, 1300 tokens (1100 estimated, 200
    // charged), less what the tokens limit refilled since (1,667 a second).
    const refilled = Math.ceil(((Date.now() - before) * 100000) / 60000);
    assert.deepEqual(peek.results.slice(0, 2).map((r) => r.remaining), [4, 60]);
    const tokens = peek.results[2].remaining;
    assert.ok(tokens >= 100001 - 1300 && tokens <= 100001 - 1300 + refilled, `${tokens} tokens left, ${refilled} refilled`);
    // Four at once; the fifth is refused by the concurrency limit.
    let open;
    const gate = new Promise((r) => (open = r));
    const slow = async () => {
      await gate;
      return { text: '', usage: { totalTokens: 10 } };
    };
    const running = [1, 2, 3, 4].map(() => complete(limiter, 'bob', 'hello', slow, 10));
    const fifth = await complete(limiter, 'bob', 'hello', slow, 10);
    assert.equal(fifth.refused, true);
    assert.equal(fifth.binding, 'inflight');
    open();
    await Promise.all(running);
    // An estimate beyond the token limit can never fit.
    const huge = await complete(limiter, 'carol', 'hello', slow, 200000);
    assert.deepEqual(huge, { refused: true, retryAfter: -1, binding: 'tokens' });
  });
}

test('examples/node/pacing.js: workers share the turns of 500 calls a minute', async (t) => {
  const server = await Server.start();
  t.after(() => server.stop());
  const redis = new Redis(server.port, '127.0.0.1');
  t.after(() => redis.disconnect());
  const { RateLimiter } = installedPackage();
  const { pace, PROVIDER } = require(path.join(ROOT, 'examples/node/pacing.js'));
  assert.deepEqual(PROVIDER.spec(), ['THROTTLE', '0', '500', '60']);
  const started = Date.now();
  const at = [];
  const { done, refused } = await pace(new RateLimiter(redis), {
    workers: 4,
    calls: 8,
    call: async (job, name) => {
      at.push(Date.now() - started);
      return `${name}:${job}`;
    },
  });
  assert.equal(done.length, 8);
  assert.deepEqual(refused, []);
  assert.equal(new Set(done.map((d) => d.split(':')[0])).size, 4, 'every worker called');
  // The k-th call goes out no earlier than its turn, k x 120 ms after the first.
  at.sort((a, b) => a - b);
  at.forEach((ms, k) => assert.ok(ms >= k * 120 - 2, `call ${k} at ${ms} ms, before its turn at ${k * 120} ms`));
  assert.ok(at[7] < 7 * 120 + 1000, `the last call at ${at[7]} ms`);
  // A worker that may wait 50 ms only is refused when its turn is further.
  const short = await pace(new RateLimiter(redis), { workers: 2, calls: 3, maxWaitMs: 50, call: async (job) => job });
  assert.ok(short.refused.length >= 1, JSON.stringify(short));
});
