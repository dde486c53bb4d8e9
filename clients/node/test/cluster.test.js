// 3-master clusters on loopback, one with the module and one without it
// (the Lua backend, which `auto` chooses there): commands routed to their
// key's node by both clients, RL.ALLOW over two slots refused with nothing
// recorded, and several limits across masters, one RL.ALLOW per slot, with
// give-back when a later slot refuses (SHADOW limits, alone in a slot, included).
'use strict';

const assert = require('node:assert/strict');
const { test, before, after } = require('node:test');
const { installedPackage, startCluster, ownerOf, raw } = require('./helpers');

const { RateLimiter, slide, throttle, keyslot, executeLua } = installedPackage();
const Redis = require('ioredis');
const { createCluster } = require('redis');

// By backend: the cluster whose servers have the module, and the one without.
const clusters = {};
before(async () => {
  clusters.module = await startCluster();
  clusters.lua = await startCluster({ withModule: false });
});
after(async () => {
  for (const c of Object.values(clusters)) await c.stop();
});

// Keys of three subjects on three different masters.
async function spread(cluster, prefix) {
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
  ['ioredis', async (cluster) => new Redis.Cluster(cluster.nodes), (c) => c.disconnect()],
  ['node-redis', async (cluster) => {
    const c = createCluster({ rootNodes: cluster.nodes.map((n) => ({ url: `redis://${n.host}:${n.port}` })) });
    c.on('error', () => {});
    await c.connect();
    return c;
  }, (c) => c.destroy ? c.destroy() : c.disconnect()],
];

for (const [name, make, close] of makers) for (const backend of ['module', 'lua']) {
  test(`cluster through ${name}, ${backend} backend: routed by slot; several limits with give-back`, async (t) => {
    const cluster = clusters[backend];
    const exists = async (key) => raw((await ownerOf(cluster, key)).port, 'EXISTS', key);
    const client = await make(cluster);
    t.after(() => close(client));
    const limiter = new RateLimiter(client);
    assert.equal(limiter.connection.isCluster, true);
    assert.equal((await limiter.backend()).kind, backend);
    if (backend === 'lua') {
      // No node has the scripts: each loads them (EVAL after NOSCRIPT) on the node of the key.
      for (const s of cluster.servers) assert.equal(await raw(s.port, 'SCRIPT', 'FLUSH'), 'OK');
    }
    const [a, b, c] = await spread(cluster, `rl:cluster:${name}`);
    for (const key of [a, b, c]) {
      assert.equal(keyslot(key), await raw(cluster.servers[0].port, 'CLUSTER', 'KEYSLOT', key));
      const r = await limiter.throttle(key, 2, 1, 60);
      assert.equal(r.remaining, 2);
      assert.equal(await exists(key), 1);
    }
    // One RL.ALLOW over two slots: refused by the server, nothing recorded.
    await assert.rejects(limiter.allow([[a + ':x', slide(5, 60)], [b + ':x', slide(5, 60)]]), /CROSSSLOT/);
    assert.deepEqual([await exists(a + ':x'), await exists(b + ':x')], [0, 0]);
    // The third limit refuses: the first two give their unit back.
    await limiter.slide(c + ':s', 1, 60);
    const entries = [[a + ':s', slide(5, 60)], [b + ':s', throttle(4, 5, 60)], [c + ':s', slide(1, 60)]];
    const d = await limiter.decide(entries, { groupBySlot: true });
    assert.equal(d.limited, true);
    assert.equal(d.index, 3);
    assert.equal(d.binding, d.results[2]);
    assert.deepEqual(d.taken, []);
    assert.deepEqual([await exists(a + ':s'), await exists(b + ':s')], [0, 0]);
    const ok = await limiter.decide(entries.slice(0, 2), { groupBySlot: true });
    assert.equal(ok.limited, false);
    assert.deepEqual(ok.taken, [0, 1]);
    assert.equal(ok.index, 1); // both 4 remaining: the longer reset (the slide's 60 s, the throttle's 12 s)
    // A slot whose limits are all SHADOW is decided limit by limit (RL.ALLOW
    // refuses an all-SHADOW call); a shadow limit never binds, and one that
    // would refuse records nothing.
    await limiter.slide(b + ':sh', 1, 60);
    const m = await limiter.decide([[a + ':m', slide(5, 60)], [b + ':sh', slide(1, 60, { shadow: true })]], { groupBySlot: true });
    assert.deepEqual([m.limited, m.index, m.results[1].limited, m.taken], [false, 1, true, [0]]);
    // A later slot's enforced refusal gives the shadow slot's units back too.
    const n = await limiter.decide([[b + ':sh2', slide(5, 60, { shadow: true })], [c + ':s', slide(1, 60)]], { groupBySlot: true });
    assert.deepEqual([n.limited, n.index, n.taken], [true, 2, []]);
    assert.equal(await exists(b + ':sh2'), 0);
    if (backend === 'lua') {
      // executeLua routes by the first key too: RL.ALLOW's, after numkeys.
      const r = await executeLua(client, ['RL.ALLOW', 2, `{${c}}:x`, `{${c}}:y`, 'SLIDE', 1, 60, 'SLIDE', 2, 60]);
      assert.deepEqual(r.slice(0, 6), [0, 1, 0, -1, 60, 1]);
      assert.equal(await exists(`{${c}}:x`), 1);
    }
  });
}
