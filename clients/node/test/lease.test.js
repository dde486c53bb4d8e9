// withLease: takes the slot, renews it while the function runs, releases it
// exactly once on return, throw or abort; refused, throws with retryAfter.
'use strict';

const assert = require('node:assert/strict');
const { test, before, after } = require('node:test');
const { installedPackage, Server, raw, sleep, clients } = require('./helpers');

const { RateLimiter, lease, LeaseRefusedError } = installedPackage();

let server;
before(async () => (server = await Server.start()));
after(async () => server && (await server.stop()));

async function releases() {
  const info = await raw(server.port, 'INFO', 'commandstats');
  const m = /cmdstat_rl\.release:calls=(\d+)/i.exec(info);
  return m ? Number(m[1]) : 0;
}

for (const [name, make, close] of clients()) {
  test(`withLease through ${name}`, async (t) => {
    const client = await make(server.port);
    t.after(() => close(client));
    const limiter = new RateLimiter(client);
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
