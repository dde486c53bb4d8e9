// The middlewares' round 5 rules and metrics over real HTTP on 127.0.0.1:
// BLOCK answered as any refusal (429, Retry-After), shadow rules (never
// refusing, not in the header fields; all-shadow requests limit by limit),
// and the OpenTelemetry metrics of docs/metrics.md read with the SDK's
// MetricReader.collect(): refused -> `limited` on the binding rule, a
// shadow rule that would refuse -> `shadow_limited` and 200, an outage ->
// `error`. The package without @opentelemetry/api installed still loads.
'use strict';

const assert = require('node:assert/strict');
const { test, before, after } = require('node:test');
const http = require('node:http');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { installedPackage, Server, raw, freePort } = require('./helpers');

const { slide, throttle, expressRateLimit, fastifyRateLimit, ioredisOptions, openTelemetryMetrics } = installedPackage();
const Redis = require('ioredis');
const express = require('express');
const Fastify = require('fastify');

function otel() {
  try {
    return { api: require('@opentelemetry/api'), sdk: require('@opentelemetry/sdk-metrics') };
  } catch (err) {
    assert.fail(`the OpenTelemetry test packages are missing (${err.message}): run \`scripts/deps.sh --node-tools\` (clients/node/test/deps.txt)`);
  }
}
const { sdk } = otel();

// A meter provider of its own (nothing global) and a reader to collect from.
function meterProvider() {
  class Reader extends sdk.MetricReader {
    async onShutdown() {}
    async onForceFlush() {}
  }
  const reader = new Reader();
  const provider = new sdk.MeterProvider({ readers: [reader] });
  return { provider, reader };
}

// The points of `name` in meter `redis-ratelimit`, as [attributes, value].
async function points(reader, name) {
  const { resourceMetrics, errors } = await reader.collect();
  assert.deepEqual(errors, []);
  const scopes = resourceMetrics.scopeMetrics.filter((s) => s.scope.name === 'redis-ratelimit');
  const metric = scopes.flatMap((s) => s.metrics).find((m) => m.descriptor.name === name);
  if (!metric) return [];
  return metric.dataPoints.map((p) => [p.attributes, p.value]);
}

// { "<rule>/<result>": count } of ratelimit.decisions.
async function decisions(reader) {
  const out = {};
  for (const [a, v] of await points(reader, 'ratelimit.decisions')) out[`${a['ratelimit.rule']}/${a['ratelimit.result']}`] = v;
  return out;
}

// { "<result>": count } of ratelimit.decision.duration.
async function durations(reader) {
  const out = {};
  for (const [a, v] of await points(reader, 'ratelimit.decision.duration')) {
    assert.deepEqual(Object.keys(a), ['ratelimit.result'], 'no attribute but the result');
    out[a['ratelimit.result']] = v.count;
  }
  return out;
}

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

function get(port, p = '/', id = 'alice') {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: p, headers: { 'X-Client-Id': id }, timeout: 5000 }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('no answer')));
  });
}

async function app(t, kind, options) {
  options = { trustedProxies: ['127.0.0.1'], clientHeader: 'X-Client-Id', log: () => {}, ...options };
  if (kind === 'express') {
    const a = express();
    a.use(expressRateLimit(options));
    a.get('/', (_req, res) => res.send('ok\n'));
    const s = await new Promise((resolve) => {
      const h = a.listen(0, '127.0.0.1', () => resolve(h));
    });
    t.after(() => new Promise((r) => { s.closeAllConnections(); s.close(r); }));
    return s.address().port;
  }
  const f = Fastify();
  await f.register(fastifyRateLimit, options);
  f.get('/', async () => 'ok\n');
  await f.listen({ port: 0, host: '127.0.0.1' });
  t.after(() => f.close());
  return f.server.address().port;
}

for (const kind of ['express', 'fastify']) for (const backend of ['module', 'lua']) {
  const srv = () => (backend === 'module' ? server : bare);

  test(`${kind}, ${backend}: limited on the binding rule, shadow_limited with 200`, async (t) => {
    const redis = new Redis(srv().port, '127.0.0.1', ioredisOptions(250));
    t.after(() => redis.disconnect());
    const { provider, reader } = meterProvider();
    const p = `rl:{${kind}:${backend}}`;
    const port = await app(t, kind, {
      client: redis,
      metrics: openTelemetryMetrics({ meterProvider: provider }),
      limits: [
        { name: 'minute', key: `${p}:m:$client`, limit: slide(2, 60) },
        { name: 'candidate', key: `${p}:n:$client`, limit: slide(1, 60), shadow: true },
      ],
      routes: [{ path: '/', limits: [{ name: 'login', key: `${p}:l:$client`, limit: throttle(9, 10, 60) }] }],
    });
    const first = await get(port);
    assert.equal(first.status, 200);
    // The shadow rule is not the client's business: not in the fields.
    assert.equal(first.headers['ratelimit-policy'], '"minute";q=2;w=60, "login";q=10;w=60');
    const second = await get(port);
    assert.equal(second.status, 200, 'the shadow rule that would refuse refuses nothing');
    const third = await get(port);
    assert.equal(third.status, 429);
    assert.equal(third.headers.ratelimit, '"minute";r=0;t=60');
    assert.deepEqual(await decisions(reader), {
      'minute/allowed': 2,
      'minute/limited': 1,
      'candidate/allowed': 1,
      'candidate/shadow_limited': 2,
      'login/allowed': 3,
    });
    assert.deepEqual(await durations(reader), { allowed: 2, limited: 1 });
    // The shadow key holds what enforcing it alone would have: one unit.
    if (backend === 'module') {
      const state = await raw(srv().port, 'RL.INSPECT', `${p}:n:alice`);
      assert.equal(state[state.indexOf('units') + 1], 1);
    }
  });

  test(`${kind}, ${backend}: a blocked key is refused with Retry-After = the block`, async (t) => {
    const redis = new Redis(srv().port, '127.0.0.1', ioredisOptions(250));
    t.after(() => redis.disconnect());
    const p = `rl:{blk:${kind}:${backend}}`;
    const port = await app(t, kind, {
      client: redis,
      limits: [{ name: 'login', key: `${p}:$client`, limit: slide(1, 60), block: 600 }],
    });
    assert.equal((await get(port)).status, 200);
    const refused = await get(port);
    assert.equal(refused.status, 429);
    assert.equal(refused.headers['retry-after'], '600');
    assert.equal(refused.body, 'rate limited: retry in 600 s\n');
  });

  test(`${kind}, ${backend}: every rule shadow: each alone, never refused`, async (t) => {
    const redis = new Redis(srv().port, '127.0.0.1', ioredisOptions(250));
    t.after(() => redis.disconnect());
    const { provider, reader } = meterProvider();
    const p = `rl:{all:${kind}:${backend}}`;
    const port = await app(t, kind, {
      client: redis,
      metrics: openTelemetryMetrics({ meterProvider: provider }),
      limits: [
        { name: 'a', key: `${p}:a:$client`, limit: slide(1, 60, { shadow: true }) },
        { name: 'b', key: `${p}:b:$client`, limit: slide(2, 60), shadow: true },
      ],
    });
    for (let i = 0; i < 3; i++) {
      const r = await get(port);
      assert.equal(r.status, 200);
      assert.equal(r.headers['ratelimit-policy'], undefined, 'no enforced rule, no fields');
    }
    assert.deepEqual(await decisions(reader), { 'a/allowed': 1, 'a/shadow_limited': 2, 'b/allowed': 2, 'b/shadow_limited': 1 });
    assert.deepEqual(await durations(reader), { allowed: 3 });
    if (backend === 'module') {
      const a = await raw(srv().port, 'RL.INSPECT', `${p}:a:alice`);
      const b = await raw(srv().port, 'RL.INSPECT', `${p}:b:alice`);
      assert.deepEqual([a[a.indexOf('units') + 1], b[b.indexOf('units') + 1]], [1, 2]);
    }
  });
}

test('an outage: error for every matched rule, and the request 503', async (t) => {
  const port = await freePort(); // nothing listens there
  const redis = new Redis(port, '127.0.0.1', { ...ioredisOptions(100), lazyConnect: true });
  redis.on('error', () => {});
  t.after(() => redis.disconnect());
  const { provider, reader } = meterProvider();
  const web = await app(t, 'express', {
    client: redis,
    backend: 'module',
    timeoutMs: 100,
    metrics: openTelemetryMetrics({ meterProvider: provider }),
    limits: [
      { name: 'minute', key: 'rl:o:$client', limit: slide(2, 60) },
      { name: 'candidate', key: 'rl:o:n:$client', limit: slide(1, 60), shadow: true },
    ],
  });
  const r = await get(web);
  assert.equal(r.status, 503);
  assert.deepEqual(await decisions(reader), { 'minute/error': 1, 'candidate/error': 1 });
  assert.deepEqual(await durations(reader), { error: 1 });
});

test('openTelemetryMetrics on the global provider, and the package without @opentelemetry/api', async () => {
  const { api } = otel();
  const { provider, reader } = meterProvider();
  assert.ok(api.metrics.setGlobalMeterProvider(provider));
  try {
    const m = openTelemetryMetrics();
    m.record(['r'], ['limited'], 'limited', 0.002);
    assert.deepEqual(await decisions(reader), { 'r/limited': 1 });
    const [[, h]] = await points(reader, 'ratelimit.decision.duration');
    assert.equal(h.count, 1);
    assert.deepEqual(h.buckets.boundaries, [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1]);
    const { resourceMetrics } = await reader.collect();
    const scope = resourceMetrics.scopeMetrics.find((s) => s.scope.name === 'redis-ratelimit').scope;
    assert.equal(scope.version, require('redis-ratelimit/package.json').version);
  } finally {
    api.metrics.disable();
  }
  // The installed package alone (no NODE_PATH, symlinks kept): it loads,
  // and only openTelemetryMetrics() asks for the API, naming the install.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rl-no-otel-'));
  try {
    fs.mkdirSync(path.join(dir, 'node_modules'));
    fs.symlinkSync(path.dirname(require.resolve('redis-ratelimit/package.json')), path.join(dir, 'node_modules', 'redis-ratelimit'));
    const script = `
      const rl = require('redis-ratelimit');
      if (rl.slide(1, 60).spec().join(' ') !== 'SLIDE 1 60') process.exit(3);
      try { rl.openTelemetryMetrics(); process.exit(4); } catch (e) { console.log(e.message); }`;
    const env = { ...process.env };
    delete env.NODE_PATH;
    const r = spawnSync(process.execPath, ['--preserve-symlinks', '-e', script], { cwd: dir, env, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /needs the OpenTelemetry API .*npm install @opentelemetry\/api/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
