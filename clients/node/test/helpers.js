// Servers for the tests: redis-server (or $REDIS_SERVER) with the module
// (target/release/libredis_ratelimit.so or $RL_MODULE) on free 127.0.0.1
// ports, stopped at the end; a 3-master cluster; the installed package.
'use strict';

const assert = require('node:assert/strict');
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '../../..');
const SERVER = process.env.REDIS_SERVER || 'redis-server';
const MODULE = process.env.RL_MODULE || path.join(ROOT, 'target/release/libredis_ratelimit.so');
const CLI = process.env.REDIS_CLI || 'redis-cli';

// The package as installed from dist/ (scripts/deps.sh --test puts it under
// tmp/node/node_modules, which NODE_PATH names), never the source tree.
function installedPackage() {
  let resolved;
  try {
    resolved = require.resolve('redis-ratelimit');
  } catch {
    assert.fail('redis-ratelimit is not installed: run `scripts/deps.sh --test` (make test does), then NODE_PATH=tmp/node/node_modules');
  }
  assert.ok(!resolved.startsWith(path.join(ROOT, 'clients/node') + path.sep), `the tests must use the installed package, not ${resolved}`);
  return require('redis-ratelimit');
}

function requireFile(file, how) {
  if (!fs.existsSync(file)) assert.fail(`${file} is missing: run \`${how}\``);
}

function checkServer() {
  const r = spawnSync(SERVER, ['--version'], { encoding: 'utf8' });
  if (r.error || r.status !== 0) assert.fail(`${SERVER} does not run: install redis-server (scripts/deps.sh --test) or set REDIS_SERVER`);
  requireFile(MODULE, 'cargo build --release');
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.unref();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

// One raw command over RESP, for the tests' own checks (no client library).
function raw(port, ...args) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    let data = '';
    sock.setTimeout(5000, () => {
      sock.destroy();
      reject(new Error('raw command timed out'));
    });
    sock.on('error', reject);
    sock.on('data', (d) => {
      data += d;
      const r = parse(data, 0);
      if (r) {
        sock.end();
        resolve(r[0]);
      }
    });
    sock.write(`*${args.length}\r\n` + args.map((a) => `$${Buffer.byteLength(String(a))}\r\n${a}\r\n`).join(''));
  });
}

// [value, next offset] of the RESP2 reply at i, or null when incomplete.
function parse(s, i) {
  const end = s.indexOf('\r\n', i);
  if (end < 0) return null;
  const kind = s[i];
  const line = s.slice(i + 1, end);
  const next = end + 2;
  if (kind === '+') return [line, next];
  if (kind === '-') return [new Error(line), next];
  if (kind === ':') return [Number(line), next];
  if (kind === '$') {
    const n = Number(line);
    if (n < 0) return [null, next];
    if (s.length < next + n + 2) return null;
    return [s.slice(next, next + n), next + n + 2];
  }
  if (kind === '*') {
    const n = Number(line);
    if (n < 0) return [null, next];
    const out = [];
    let at = next;
    for (let k = 0; k < n; k++) {
      const r = parse(s, at);
      if (!r) return null;
      out.push(r[0]);
      at = r[1];
    }
    return [out, at];
  }
  throw new Error(`unexpected reply ${s.slice(i, i + 20)}`);
}

async function waitUntil(what, fn, ms = 10000) {
  const until = Date.now() + ms;
  let last;
  while (Date.now() < until) {
    try {
      if (await fn()) return;
    } catch (err) {
      last = err;
    }
    await sleep(50);
  }
  assert.fail(`timed out waiting for ${what}${last ? `: ${last.message}` : ''}`);
}

class Server {
  constructor(proc, port, dir) {
    this.proc = proc;
    this.port = port;
    this.dir = dir;
    this.url = `redis://127.0.0.1:${port}`;
  }

  // withModule false: a server without the module.
  static async start({ extra = [], withModule = true } = {}) {
    checkServer();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rl-node-test-'));
    for (let attempt = 0; attempt < 5; attempt++) {
      const port = await freePort();
      const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no',
        '--logfile', path.join(dir, 'server.log'), ...(withModule ? ['--loadmodule', MODULE] : []), ...extra];
      const proc = spawn(SERVER, args, { stdio: 'ignore' });
      let exited = false;
      proc.once('exit', () => (exited = true));
      const server = new Server(proc, port, dir);
      try {
        await waitUntil(`${SERVER} on port ${port}`, async () => {
          if (exited) throw new Error('exited');
          return (await raw(port, 'PING')) === 'PONG';
        }, 10000);
        return server;
      } catch {
        proc.kill('SIGKILL');
      }
    }
    const log = fs.existsSync(path.join(dir, 'server.log')) ? fs.readFileSync(path.join(dir, 'server.log'), 'utf8') : '';
    assert.fail(`${SERVER} did not start with ${MODULE}; its log:\n${log}`);
  }

  signal(sig) {
    this.proc.kill(sig);
  }

  // Kills the server and, `downMs` later, starts it again on the same port
  // (the clients' connections closed under them); resolves once it
  // answers PING.
  async restart(downMs = 0) {
    const args = this.proc.spawnargs.slice(1);
    const gone = new Promise((r) => this.proc.once('exit', r));
    this.proc.kill('SIGKILL');
    await gone;
    await sleep(downMs);
    this.proc = spawn(SERVER, args, { stdio: 'ignore' });
    await waitUntil(`${SERVER} restarted on port ${this.port}`, async () => (await raw(this.port, 'PING')) === 'PONG', 10000);
  }

  async stop() {
    if (this.proc.exitCode === null && this.proc.signalCode === null) {
      this.proc.kill('SIGCONT');
      const gone = new Promise((r) => this.proc.once('exit', r));
      this.proc.kill('SIGKILL');
      await gone;
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

// Three masters on loopback, no replicas, formed by redis-cli --cluster
// create; withModule false: without the module.
async function startCluster({ withModule = true } = {}) {
  const servers = [];
  for (let i = 0; i < 3; i++) {
    const bus = await freePort();
    servers.push(await Server.start({ withModule, extra: ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf',
      '--cluster-node-timeout', '2000', '--cluster-port', String(bus)] }));
  }
  const v = spawnSync(CLI, ['--version'], { encoding: 'utf8' });
  if (v.error || v.status !== 0) assert.fail(`${CLI} does not run: install redis-tools (scripts/deps.sh --test) or set REDIS_CLI`);
  const r = spawnSync(CLI, ['--cluster', 'create', ...servers.map((s) => `127.0.0.1:${s.port}`),
    '--cluster-replicas', '0', '--cluster-yes'], { encoding: 'utf8', timeout: 60000 });
  assert.equal(r.status, 0, `redis-cli --cluster create failed:\n${r.stdout}${r.stderr}`);
  await waitUntil('the cluster to settle', async () => {
    for (const s of servers) {
      const info = await raw(s.port, 'CLUSTER', 'INFO');
      if (!/cluster_state:ok/.test(info)) return false;
      const slots = await raw(s.port, 'CLUSTER', 'SLOTS');
      if (slots.length !== 3) return false;
    }
    return true;
  }, 30000);
  return {
    servers,
    nodes: servers.map((s) => ({ host: '127.0.0.1', port: s.port })),
    async stop() {
      await Promise.all(servers.map((s) => s.stop()));
    },
  };
}

// The node of a cluster that serves `key`.
async function ownerOf(cluster, key) {
  const slot = await raw(cluster.servers[0].port, 'CLUSTER', 'KEYSLOT', key);
  const slots = await raw(cluster.servers[0].port, 'CLUSTER', 'SLOTS');
  const range = slots.find(([a, b]) => a <= slot && slot <= b);
  return cluster.servers.find((s) => s.port === Number(range[2][1]));
}

// The clients both kinds of test run with: [name, make(url), close(client)].
function clients() {
  const Redis = require('ioredis');
  const { createClient } = require('redis');
  return [
    ['ioredis', async (port, options = {}) => new Redis(port, '127.0.0.1', options), (c) => c.disconnect()],
    ['node-redis', async (port) => {
      const c = createClient({ url: `redis://127.0.0.1:${port}` });
      c.on('error', () => {});
      await c.connect();
      return c;
    }, (c) => c.destroy ? c.destroy() : c.disconnect()],
  ];
}

module.exports = { ROOT, MODULE, installedPackage, Server, startCluster, ownerOf, raw, sleep, waitUntil, freePort, clients };
