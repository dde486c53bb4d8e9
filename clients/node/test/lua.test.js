// The Lua backend's own promises (executeLua): the scripts it carries, the
// module's replies and error texts, EVAL once after NOSCRIPT, every key
// declared, replies as bytes, RL.INSPECT as a map under RESP3, the
// head argument and the client's clock, WRONGTYPE both ways between
// the module's keys and the scripts'.
'use strict';

const assert = require('node:assert/strict');
const { test, before, after } = require('node:test');
const { createHash } = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { ROOT, installedPackage, Server, clients, raw } = require('./helpers');

const rl = installedPackage();
const { RateLimiter, executeLua, scriptSource, head, zoneOffsets, WrongTypeError } = rl;

// The module's server, and one without the module.
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

const sha1 = (b) => createHash('sha1').update(b).digest('hex');
// An error whose message matches `pattern`.
const text = (pattern) => (err) => {
  assert.match(err.message, pattern);
  return true;
};
const COMMANDS = ['THROTTLE', 'SLIDE', 'SLICE', 'LEASE', 'RELEASE', 'QUOTA', 'ALLOW', 'PEEK', 'REFUND', 'INSPECT', 'CHARGE', 'TOP'];

test("the package carries clients/lua/dist; a script is its manifest prefix, then ratelimit.lua", () => {
  const dir = path.join(path.dirname(require.resolve('redis-ratelimit/package.json')), 'lib', 'lua');
  const source = path.join(ROOT, 'clients', 'lua', 'dist');
  for (const file of ['ratelimit.lua', 'manifest.json']) {
    assert.ok(fs.readFileSync(path.join(dir, file)).equals(fs.readFileSync(path.join(source, file))),
      `lib/lua/${file} differs from clients/lua/dist/${file}: rebuild the package (make dist-node)`);
  }
  const body = fs.readFileSync(path.join(source, 'ratelimit.lua'));
  const manifest = JSON.parse(fs.readFileSync(path.join(source, 'manifest.json'), 'utf8')).commands;
  for (const name of COMMANDS) {
    const want = Buffer.concat([Buffer.from(manifest[`RL.${name}`].prefix), body]);
    assert.ok(scriptSource(`rl.${name.toLowerCase()}`).equals(want), name);
  }
  assert.match(scriptSource('RL.PEEK').toString('latin1'), /^#!lua flags=no-writes\nlocal entry, arg = 'several', false/);
  assert.throws(() => scriptSource('RL.STATE'), RangeError);
});

// Command lines whose replies do not depend on the instant (long windows).
const LINES = [
  ['RL.THROTTLE', '{k}t', 5, 1, 3600],
  ['RL.THROTTLE', '{k}t', 5, 1, 3600, 3],
  ['RL.SLIDE', '{k}s', 10, 3600, 4],
  ['RL.SLIDE', '{k}s', 10, 3600, 1, 'PRECISION', 60],
  ['RL.LEASE', '{k}l', 2, 3600, 'a'],
  ['RL.LEASE', '{k}l', 2, 3600, 'b', 2],
  ['RL.RELEASE', '{k}l', 'a'],
  ['RL.RELEASE', '{k}l', 'a'],
  ['RL.ALLOW', 2, '{k}a', '{k}b', 'SLIDE', 3, 3600, 'LEASE', 1, 3600, 'ID', 'x'],
  ['RL.PEEK', 2, '{k}a', '{k}b', 'SLIDE', 3, 3600, 'LEASE', 1, 3600, 'ID', 'y', 'QUANTITY', 2],
  ['RL.REFUND', '{k}s', 'SLIDE', 10, 3600, 2],
  ['RL.INSPECT', '{k}nothing'],
  ['RL.SLIDE', '{k}s', 10, -1],
  ['RL.THROTTLE', '{k}t', 5, 1, 3600, 'SOON'],
  ['RL.ALLOW', 0, '{k}a'],
  ['RL.ALLOW', 2, '{k}a', '{k}a', 'SLIDE', 1, 1, 'SLIDE', 1, 1],
  ['RL.QUOTA', '{k}q', 5, 'DAY', 'TZ', 'Moon/Base'],
  ['RL.QUOTA', '{k}q', 5, 'DAY', 'TZ', '+19:00'],
  ['rl.slide', '{k}s', 10],
  ['RL.SLIDE', '{k}t', 10, 3600],
];

async function answer(call) {
  try {
    return await call();
  } catch (err) {
    return { error: err.message, name: err.constructor.name };
  }
}

for (const [name, make, close] of clients()) {
  test(`executeLua through ${name}: the module's replies and errors, on keys of its own`, async (t) => {
    const client = await make(server.port);
    t.after(() => close(client));
    const send = (line) => (name === 'ioredis' ? client.call(...line.map(String)) : client.sendCommand(line.map(String)));
    let errors = 0;
    for (const line of LINES) {
      const module = await answer(() => send([line[0], ...line.slice(1).map((a) => (String(a).startsWith('{k}') ? `m${a}` : a))]));
      const lua = await answer(() => executeLua(client, [line[0], ...line.slice(1).map((a) => (String(a).startsWith('{k}') ? `l${a}` : a))]));
      if (module && module.error) errors++;
      // An error naming a key names the backend's own.
      if (lua && lua.error) lua.error = lua.error.replaceAll('l{k}', 'm{k}');
      assert.deepEqual(lua, module, JSON.stringify(line));
    }
    assert.equal(errors, 8);
  });

  test(`NOSCRIPT through ${name}: EVAL once, then EVALSHA finds it`, async (t) => {
    const client = await make(bare.port);
    t.after(() => close(client));
    const sha = sha1(scriptSource('RL.SLIDE'));
    const key = `noscript:${name}`;
    assert.equal(await raw(bare.port, 'SCRIPT', 'FLUSH'), 'OK');
    const before = await evalCalls(bare.port);
    assert.deepEqual(await executeLua(client, ['RL.SLIDE', key, 10, 3600]), [0, 10, 9, -1, 3600]);
    assert.deepEqual(await raw(bare.port, 'SCRIPT', 'EXISTS', sha), [1]);
    assert.deepEqual(await executeLua(client, ['RL.SLIDE', key, 10, 3600]), [0, 10, 8, -1, 3600]);
    const after = await evalCalls(bare.port);
    assert.deepEqual([after.eval - before.eval, after.evalsha - before.evalsha], [1, 2]);
    // The typed API recovers the same way.
    assert.equal(await raw(bare.port, 'SCRIPT', 'FLUSH'), 'OK');
    const r = await new RateLimiter(client).slide(key, 10, 3600);
    assert.equal(r.remaining, 7);
  });
}

async function evalCalls(port) {
  const info = await raw(port, 'INFO', 'commandstats');
  const calls = (cmd) => Number((new RegExp(`cmdstat_${cmd}:calls=(\\d+)`).exec(info) || [0, 0])[1]);
  return { eval: calls('eval'), evalsha: calls('evalsha') };
}

test('what is sent: EVALSHA sha numkeys keys... head the other args..., routed by the first key', async (t) => {
  const Redis = require('ioredis');
  const client = new Redis(bare.port, '127.0.0.1');
  t.after(() => client.disconnect());
  const seen = [];
  const connection = rl.connectionOf(client);
  const spy = { client, kind: connection.kind, isCluster: false, send: (args, route, read) => (seen.push({ args, route }), connection.send(args, route, read)) };
  await executeLua(spy, ['RL.ALLOW', 2, '{u}a', '{u}b', 'SLIDE', 1, 60, 'QUOTA', 1, 'DAY', 'TZ', 'Europe/Berlin']);
  await executeLua(spy, ['RL.INSPECT', 'x']);
  await assert.rejects(executeLua(spy, ['RL.ALLOW', 'many', 'a', 'SLIDE', 1, 1]), text(/^ERR numkeys must be an integer from 1 to 16$/));
  const [allow, inspect, bad] = seen.filter((s) => s.args[0] === 'EVALSHA');
  assert.deepEqual(allow.args.slice(2, 5), ['2', '{u}a', '{u}b']);
  assert.match(allow.args[5], /^;Europe\/Berlin\|Europe\/Berlin\|\d+\|3600(\|\d+\|(7200|3600))+$/);
  assert.deepEqual(allow.args.slice(6), ['2', 'SLIDE', '1', '60', 'QUOTA', '1', 'DAY', 'TZ', 'Europe/Berlin']);
  assert.deepEqual(allow.route.key, '{u}a');
  assert.equal(allow.route.slot, rl.keyslot('{u}a'));
  assert.deepEqual(inspect.args.slice(2), ['1', 'x', '']);
  assert.deepEqual(bad.args.slice(2), ['0', '', 'many', 'a', 'SLIDE', '1', '1']);
});

test('replies as bytes: lease ids of any bytes, as the module answers them', async (t) => {
  const Redis = require('ioredis');
  const client = new Redis(server.port, '127.0.0.1');
  t.after(() => client.disconnect());
  const ids = [Buffer.from([0, 255, 13, 10, 0x80]), Buffer.from(Array.from({ length: 128 }, (_, i) => 255 - i))];
  for (const [prefix, run] of [['m', (line) => client.callBuffer(...line)], ['l', (line) => executeLua(client, line, { buffers: true })]]) {
    for (const id of ids) await run(['RL.LEASE', `${prefix}:bytes`, '5', '3600', id]);
    const state = await run(['RL.INSPECT', `${prefix}:bytes`]);
    const holders = state[state.findIndex((f) => Buffer.isBuffer(f) && f.toString() === 'holders') + 1];
    assert.deepEqual(holders.map((h) => Buffer.from(h[0]).toString('hex')).sort(), ids.map((i) => i.toString('hex')).sort(), prefix);
    assert.equal(await run(['RL.RELEASE', `${prefix}:bytes`, ids[0]]), 1);
  }
});

test('node-redis under RESP3: RL.INSPECT as the map the module answers', async (t) => {
  const { createClient } = require('redis');
  const client = createClient({ url: server.url, RESP: 3 });
  client.on('error', () => {});
  await client.connect();
  t.after(() => (client.destroy ? client.destroy() : client.disconnect()));
  await client.sendCommand(['RL.SLIDE', 'm:map', '10', '3600']);
  await executeLua(client, ['RL.SLIDE', 'l:map', 10, 3600]);
  const module = await client.sendCommand(['RL.INSPECT', 'm:map']);
  const lua = await executeLua(client, ['RL.INSPECT', 'l:map']);
  assert.ok(!Array.isArray(module) && !Array.isArray(lua));
  assert.deepEqual(Object.keys(lua), Object.keys(module));
  for (const field of ['type', 'units', 'entries']) assert.deepEqual(lua[field], module[field], field);
  const state = await new RateLimiter(client, { backend: 'lua' }).inspect('l:map');
  assert.equal(state.type, 'slide');
  assert.equal(state.units, 1);
});

test('WRONGTYPE both ways: a module key refused by the scripts, a script key refused by the module', async (t) => {
  const Redis = require('ioredis');
  const client = new Redis(server.port, '127.0.0.1');
  t.after(() => client.disconnect());
  const module = new RateLimiter(client, { backend: 'module' });
  const lua = new RateLimiter(client, { backend: 'lua' });
  const calls = [
    (l, k) => l.throttle(k, 5, 1, 60),
    (l, k) => l.slide(k, 5, 60),
    (l, k) => l.slice(k, 5, 60, 6),
    (l, k) => l.lease(k, 5, 60, 'a'),
    (l, k) => l.quota(k, 5, 'DAY', { tz: 'Europe/Berlin' }),
  ];
  for (const [i, take] of calls.entries()) {
    const other = calls[(i + 1) % calls.length];
    assert.equal((await take(module, `wt:m${i}`)).allowed, true);
    assert.equal((await take(lua, `wt:l${i}`)).allowed, true);
    // The same kind, on the other backend's key.
    await assert.rejects(take(lua, `wt:m${i}`), WrongTypeError);
    await assert.rejects(take(module, `wt:l${i}`), WrongTypeError);
    // Another kind, on each backend's own key.
    await assert.rejects(other(module, `wt:m${i}`), WrongTypeError);
    await assert.rejects(other(lua, `wt:l${i}`), WrongTypeError);
    assert.notEqual(await raw(server.port, 'TYPE', `wt:m${i}`), await raw(server.port, 'TYPE', `wt:l${i}`));
  }
  await assert.rejects(executeLua(client, ['RL.INSPECT', 'wt:m0']), text(/^WRONGTYPE /));
  await assert.rejects(client.call('RL.INSPECT', 'wt:l0'), text(/^WRONGTYPE /));
});

test("the head: the clock and the zones' offsets; a client's clock far from the server's", async (t) => {
  const at = Date.UTC(2026, 2, 29, 0, 30) / 1000;
  const lo = at - 400 * 86400;
  const berlin = `;europe/berlin|Europe/Berlin|${lo}|3600|1743296400|7200|1761440400|3600|1774746000|7200` +
    '|1792890000|3600|1806195600|7200';
  assert.equal(head([100, 'DAY'], undefined, at), '');
  assert.equal(head([100, 'DAY'], 1774744200123456n, at), '1774744200123456');
  assert.equal(head([100, 'DAY', 'tz', 'europe/berlin', 'TZ', 'europe/berlin'], undefined, at), berlin);
  for (const value of ['UTC', 'utc', '+05:30', 'Moon/Base', Buffer.from([0xff])]) {
    assert.equal(head([1, 'DAY', 'TZ', value], 5n, at), '5');
  }
  assert.equal(zoneOffsets(Buffer.from('Asia/Kolkata'), at), `Asia/Kolkata|Asia/Kolkata|${lo}|19800`);
  assert.equal(zoneOffsets(Buffer.from('asia/calcutta'), at), `asia/calcutta|Asia/Calcutta|${lo}|19800`);

  const Redis = require('ioredis');
  const client = new Redis(bare.port, '127.0.0.1');
  t.after(() => client.disconnect());
  const line = ['RL.QUOTA', 'cal', 5, 'YEAR', 'TZ', 'Asia/Kolkata'];
  assert.deepEqual((await executeLua(client, line)).slice(0, 4), [0, 5, 4, -1]);
  // The client's clock 300 days ahead: the offsets still cover the server's day.
  const day = ['RL.QUOTA', 'cal:d', 5, 'DAY', 'TZ', 'Asia/Kolkata'];
  assert.deepEqual((await executeLua(client, day, { now: Date.now() + 300 * 86400e3 })).slice(0, 4), [0, 5, 4, -1]);
  // 500 days ahead: they do not.
  await assert.rejects(executeLua(client, line, { now: Date.now() + 500 * 86400e3 }),
    text(/^ERR ratelimit: the calendar of time zone 'Asia\/Kolkata' is not covered by the offsets the client passed/));
  await assert.rejects(executeLua(client, ['RL.QUOTA', 'cal', 5, 'HOUR', 'TZ', 'Mars/Olympus']), text(/^ERR unknown time zone 'Mars\/Olympus'$/));
});

test('executeLua refuses what is not a command line of the module', async (t) => {
  const Redis = require('ioredis');
  const client = new Redis(bare.port, '127.0.0.1');
  t.after(() => client.disconnect());
  await assert.rejects(executeLua(client, []), TypeError);
  await assert.rejects(executeLua(client, ['RL.STATE', 'k']), RangeError);
  await assert.rejects(executeLua(client, ['GET', 'k']), RangeError);
  const past = Date.now() - 1;
  await assert.rejects(executeLua(client, ['RL.SLIDE', 'k', 1, 1], { deadline: past }), rl.DeadlineError);
});
