// A 3-master cluster on loopback: commands routed to their key's node by
// both clients, on the module and on the Lua backend (forced), and several
// limits across masters, one RL.ALLOW per slot, with give-back when a later
// slot refuses.
'use strict';

const assert = require('node:assert/strict');
const { test, before, after } = require('node:test');
const { installedPackage, startCluster, ownerOf, raw } = require('./helpers');

const { RateLimiter, slide, throttle, keyslot, executeLua } = installedPackage();
const Redis = require('ioredis');
const { createCluster } = require('redis');

let cluster;
before(async () => (cluster = await startCluster()));
after(async () => cluster && (await cluster.stop()));

// Keys of three subjects on three different masters.
async function spread(prefix) {
  const keys = [];
  const owners = new Set();
  for (let i = 0; keys.length < 3; i++) {
    const key = `${prefix}:${i}`;
    const owner = (await ownerOf(cluster, key)).port;
    if (!owners.has(owner)) {
      owners.add(owner);
      keys.push(key);
    }
  }
  return keys;
}

const makers = [
  ['ioredis', async () => new Redis.Cluster(cluster.nodes), (c) => c.disconnect()],
  ['node-redis', async () => {
    const c = createCluster({ rootNodes: cluster.nodes.map((n) => ({ url: `redis://${n.host}:${n.port}` })) });
    c.on('error', () => {});
    await c.connect();
    return c;
  }, (c) => c.destroy ? c.destroy() : c.disconnect()],
];

for (const [name, make, close] of makers) for (const backend of ['module', 'lua']) {
  test(`cluster through ${name}, ${backend} backend: routed by slot; several limits with give-back`, async (t) => {
    const client = await make();
    t.after(() => close(client));
    const limiter = new RateLimiter(client, { backend });
    assert.equal(limiter.connection.isCluster, true);
    assert.equal((await limiter.backend()).kind, backend);
    if (backend === 'lua') {
      // No node has the scripts: each loads them (EVAL after NOSCRIPT) on the node of the key.
      for (const s of cluster.servers) assert.equal(await raw(s.port, 'SCRIPT', 'FLUSH'), 'OK');
    }
    const [a, b, c] = await spread(`rl:cluster:${name}:${backend}`);
    for (const key of [a, b, c]) {
      assert.equal(keyslot(key), await raw(cluster.servers[0].port, 'CLUSTER', 'KEYSLOT', key));
      const r = await limiter.throttle(key, 2, 1, 60);
      assert.equal(r.remaining, 2);
      const owner = await ownerOf(cluster, key);
      assert.equal(await raw(owner.port, 'EXISTS', key), 1);
    }
    // The third limit refuses: the first two give their unit back.
    await limiter.slide(c + ':s', 1, 60);
    const entries = [[a + ':s', slide(5, 60)], [b + ':s', throttle(4, 5, 60)], [c + ':s', slide(1, 60)]];
    const d = await limiter.decide(entries, { groupBySlot: true });
    assert.equal(d.limited, true);
    assert.equal(d.index, 3);
    assert.equal(d.binding, d.results[2]);
    assert.deepEqual(d.taken, []);
    assert.equal(await raw((await ownerOf(cluster, a + ':s')).port, 'EXISTS', a + ':s'), 0);
    assert.equal(await raw((await ownerOf(cluster, b + ':s')).port, 'EXISTS', b + ':s'), 0);
    const ok = await limiter.decide(entries.slice(0, 2), { groupBySlot: true });
    assert.equal(ok.limited, false);
    assert.deepEqual(ok.taken, [0, 1]);
    assert.equal(ok.index, 1); // both 4 remaining: the longer reset (the slide's 60 s, the throttle's 12 s)
    if (backend === 'lua') {
      // executeLua routes by the first key too: RL.ALLOW's, after numkeys.
      const r = await executeLua(client, ['RL.ALLOW', 2, `{${c}}:x`, `{${c}}:y`, 'SLIDE', 1, 60, 'SLIDE', 2, 60]);
      assert.deepEqual(r.slice(0, 6), [0, 1, 0, -1, 60, 1]);
      assert.equal(await raw((await ownerOf(cluster, c)).port, 'EXISTS', `{${c}}:x`), 1);
    }
  });
}
