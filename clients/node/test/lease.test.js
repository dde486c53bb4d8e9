// withLease: takes the slot, renews it while the function runs, releases it
// exactly once on return, throw or abort; refused, throws with retryAfter.
// On the module, and on the Lua backend on a server without it.
'use strict';

const assert = require('node:assert/strict');
const { createHash } = require('node:crypto');
const { test, before, after } = require('node:test');
const { installedPackage, Server, raw, sleep, clients } = require('./helpers');

const { RateLimiter, lease, LeaseRefusedError, connectionOf, scriptSource } = installedPackage();

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

// The client's Connection, counting the RL.RELEASE scripts run (EVALSHA,
// or EVAL after its NOSCRIPT).
function counting(client) {
  const inner = connectionOf(client);
  const script = scriptSource('RL.RELEASE');
  const sha = createHash('sha1').update(script).digest('hex');
  const connection = {
    client: inner.client,
    kind: inner.kind,
    isCluster: inner.isCluster,
    released: 0,
    async send(args, route, read) {
      const reply = await inner.send(args, route, read);
      if ((args[0] === 'EVALSHA' && args[1] === sha) || (args[0] === 'EVAL' && Buffer.from(args[1]).equals(script))) {
        connection.released++;
      }
      return reply;
    },
  };
  return connection;
}

for (const [name, make, close] of clients()) for (const backend of ['module', 'lua']) {
  test(`withLease through ${name}, ${backend} backend`, async (t) => {
    const srv = backend === 'module' ? server : bare;
    const client = await make(srv.port);
    t.after(() => close(client));
    const connection = counting(client);
    const limiter = new RateLimiter(connection);
    assert.equal((await limiter.backend()).kind, backend);
    // RL.RELEASE calls: the server's count (module), or the scripts sent (Lua).
    async function releases() {
      if (backend === 'lua') return connection.released;
      const info = await raw(srv.port, 'INFO', 'commandstats');
      const m = /cmdstat_rl\.release:calls=(\d+)/i.exec(info);
      return m ? Number(m[1]) : 0;
    }
    const key = `rl:lease:${name}`;
    const limit = lease(1, 600, { ms: true });
    let before = await releases();
    // Held past its ttl by the renewals; released once on return.
    const value = await limiter.withLease(key, limit, async ({ id, result }) => {
      assert.equal(result.allowed, true);
      await sleep(1500);
      const state = await limiter.inspect(key);
      assert.equal(state.held, 1);
      assert.equal(state.holders[0].leaseId, id);
      await assert.rejects(limiter.withLease(key, limit, async () => 0), (err) => {
        assert.ok(err instanceof LeaseRefusedError);
        assert.ok(err.retryAfter > 0 && err.retryAfter <= 600);
        return true;
      });
      return 42;
    });
    assert.equal(value, 42);
    assert.equal(await limiter.inspect(key), null);
    assert.equal(await releases(), before + 1);
    // Released once on a throw.
    before = await releases();
    await assert.rejects(limiter.withLease(key, limit, async () => {
      throw new Error('boom');
    }), /boom/);
    assert.equal(await limiter.inspect(key), null);
    assert.equal(await releases(), before + 1);
    // Released at once on abort, and not again when the function ends.
    before = await releases();
    const controller = new AbortController();
    let ended;
    const finished = new Promise((r) => (ended = r));
    const run = limiter.withLease(key, lease(1, 60), async ({ signal }) => {
      await sleep(300);
      ended(signal.aborted);
      return 1;
    }, { signal: controller.signal });
    await sleep(50);
    controller.abort(new Error('cancelled'));
    await assert.rejects(run, /cancelled/);
    assert.equal(await limiter.inspect(key), null);
    assert.equal(await finished, true);
    assert.equal(await releases(), before + 1);
  });
}
