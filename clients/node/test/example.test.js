// examples/node/app.js, the Express example, run for real against a server.
'use strict';

const assert = require('node:assert/strict');
const { test } = require('node:test');
const { spawn } = require('node:child_process');
const http = require('node:http');
const path = require('node:path');
const { ROOT, Server, installedPackage, raw, waitUntil } = require('./helpers');

installedPackage();

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
