// The Node package's overhead, on loopback against a server with the
// module (started here on a free port: $REDIS_SERVER, $RL_MODULE):
//  1. a typed call's wall time vs the same client's raw generic call
//     (ioredis `call`, node-redis `sendCommand`), sequential, one at a time;
//  2. an Express app's requests/s with and without the middleware (keep-alive
//     connections from this process, 16 at once);
//  3. withLease around an empty function vs raw RL.LEASE + RL.RELEASE.
// Rounds alternate the two sides; the ratio is of the medians.
//   NODE_PATH=tmp/node/node_modules RL_MODULE=target/release/libredis_ratelimit.so node bench/clients/node_bench.js
'use strict';

const { spawn } = require('node:child_process');
const http = require('node:http');
const net = require('node:net');
const Redis = require('ioredis');
const { createClient } = require('redis');
const express = require('express');
const { RateLimiter, expressRateLimit, ioredisOptions, throttle, lease } = require('redis-ratelimit');

const CALLS = Number(process.env.BENCH_CALLS || 20000);
const ROUNDS = Number(process.env.BENCH_ROUNDS || 5);
const HTTP_MS = Number(process.env.BENCH_HTTP_MS || 2000);

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function startServer() {
  const port = await freePort();
  const module = process.env.RL_MODULE || 'target/release/libredis_ratelimit.so';
  const proc = spawn(process.env.REDIS_SERVER || 'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--loadmodule', module],
    { stdio: 'ignore' });
  const probe = new Redis(port, '127.0.0.1', { lazyConnect: true, retryStrategy: () => null });
  probe.on('error', () => {});
  for (let i = 0; i < 100; i++) {
    try {
      await probe.connect();
      break;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  probe.disconnect();
  return { port, stop: () => proc.kill('SIGKILL') };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function timed(fn) {
  const t = process.hrtime.bigint();
  for (let i = 0; i < CALLS; i++) await fn(i);
  return Number(process.hrtime.bigint() - t) / 1e3 / CALLS; // us per call
}

async function compare(label, raw, typed) {
  const a = [];
  const b = [];
  await timed(raw);
  await timed(typed);
  for (let r = 0; r < ROUNDS; r++) {
    a.push(await timed(raw));
    b.push(await timed(typed));
  }
  const ra = median(a);
  const rb = median(b);
  console.log(`${label.padEnd(44)} raw ${ra.toFixed(1)} us, package ${rb.toFixed(1)} us: ${(rb / ra).toFixed(3)}x`);
}

async function requestsPerSecond(port) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
  let done = 0;
  const until = Date.now() + HTTP_MS;
  const worker = async (w) => {
    while (Date.now() < until) {
      await new Promise((resolve, reject) => {
        http.get({ host: '127.0.0.1', port, path: '/', agent, headers: { 'X-Client-Id': `c${w}` } }, (res) => {
          res.resume();
          res.on('end', resolve);
        }).on('error', reject);
      });
      done++;
    }
  };
  const t = Date.now();
  await Promise.all(Array.from({ length: 16 }, (_, w) => worker(w)));
  agent.destroy();
  return done / ((Date.now() - t) / 1000);
}

async function app(withLimiter, client) {
  const a = express();
  if (withLimiter) {
    a.use(expressRateLimit({ client, limits: [{ name: 'default', key: 'rl:bench:$client', limit: throttle(1e9, 1e9, 1) }] }));
  }
  a.get('/', (_req, res) => res.send('ok\n'));
  return new Promise((resolve) => {
    const s = a.listen(0, '127.0.0.1', () => resolve(s));
  });
}

async function main() {
  const server = await startServer();
  try {
    const io = new Redis(server.port, '127.0.0.1');
    const nr = createClient({ url: `redis://127.0.0.1:${server.port}` });
    await nr.connect();
    console.log(`node ${process.version}, ${CALLS} sequential calls x ${ROUNDS} rounds, median`);
    const L = 1e9;
    for (const [name, client, raw] of [
      ['ioredis', io, (i) => io.call('RL.THROTTLE', `rl:b:${i & 1023}`, L, L, 1)],
      ['node-redis', nr, (i) => nr.sendCommand(['RL.THROTTLE', `rl:b:${i & 1023}`, String(L), String(L), '1'])],
    ]) {
      const limiter = new RateLimiter(client);
      await compare(`RL.THROTTLE, ${name}`, raw, (i) => limiter.throttle(`rl:b:${i & 1023}`, L, L, 1));
      const slot = lease(1000000, 60);
      const rawLease = name === 'ioredis'
        ? async (i) => {
          await io.call('RL.LEASE', 'rl:bl', 1000000, 60, `id${i}`);
          await io.call('RL.RELEASE', 'rl:bl', `id${i}`);
        }
        : async (i) => {
          await nr.sendCommand(['RL.LEASE', 'rl:bl', '1000000', '60', `id${i}`]);
          await nr.sendCommand(['RL.RELEASE', 'rl:bl', `id${i}`]);
        };
      await compare(`withLease vs RL.LEASE + RL.RELEASE, ${name}`, rawLease,
        (i) => limiter.withLease('rl:bl', slot, () => undefined, { id: `id${i}` }));
    }
    const limited = new Redis(server.port, '127.0.0.1', ioredisOptions(250));
    const plain = await app(false, limited);
    const guarded = await app(true, limited);
    const without = [];
    const withL = [];
    for (let r = 0; r < 3; r++) {
      without.push(await requestsPerSecond(plain.address().port));
      withL.push(await requestsPerSecond(guarded.address().port));
    }
    const w0 = median(without);
    const w1 = median(withL);
    console.log(`Express, 16 keep-alive connections, ${HTTP_MS} ms x 3: without ${w0.toFixed(0)} req/s, ` +
      `with the middleware ${w1.toFixed(0)} req/s: ${(w1 / w0).toFixed(3)}`);
    plain.close();
    guarded.close();
    limited.disconnect();
    io.disconnect();
    await nr.quit();
  } finally {
    server.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
