// Every command through the typed API, on both clients and both backends
// (the module; the Lua backend on a server without it): replies, typed
// results, RL.INSPECT per kind, errors, the MS flag, the backend choice.
'use strict';

const assert = require('node:assert/strict');
const { test, before, after } = require('node:test');
const fs = require('node:fs');
const path = require('node:path');
const { ROOT, installedPackage, Server, clients, raw } = require('./helpers');

const rl = installedPackage();
const { RateLimiter, throttle, slide, slice, lease, quota, ArgumentError, WrongTypeError, BackendUnavailableError } = rl;

// The module's server, and one without the module (the Lua backend's).
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

test('the version is the module version (Cargo.toml)', () => {
  const cargo = fs.readFileSync(path.join(ROOT, 'Cargo.toml'), 'utf8');
  const version = /^version\s*=\s*"([^"]+)"/m.exec(cargo)[1];
  assert.equal(require('redis-ratelimit/package.json').version, version);
});

test('the installed package carries its code, declarations and README', () => {
  const dir = path.dirname(require.resolve('redis-ratelimit/package.json'));
  for (const f of ['lib/index.js', 'lib/index.d.ts', 'lib/middleware.js', 'lib/middleware.d.ts', 'README.md']) {
    assert.ok(fs.existsSync(path.join(dir, f)), `${f} is missing from the package`);
  }
  assert.ok(!fs.existsSync(path.join(dir, 'src')), 'the TypeScript sources are not shipped');
});

const five = (r) => [r.limited ? 1 : 0, r.limit, r.remaining, r.retryAfter, r.resetAfter];

for (const [name, make, close] of clients()) for (const backend of ['module', 'lua']) {
  test(`every command through ${name}, ${backend} backend`, async (t) => {
    const srv = backend === 'module' ? server : bare;
    const client = await make(srv.port);
    t.after(() => close(client));
    const limiter = new RateLimiter(client);
    assert.equal((await limiter.backend()).kind, backend);
    const p = `rl:${name}:`;

    // RL.THROTTLE: the README's first call, and the fourth, limited.
    let r = await limiter.throttle(p + 't', 2, 1, 60);
    assert.deepEqual(five(r), [0, 3, 2, -1, 60]);
    assert.equal(r.allowed, true);
    await limiter.throttle(p + 't', 2, 1, 60);
    await limiter.throttle(p + 't', 2, 1, 60);
    r = await limiter.throttle(p + 't', 2, 1, 60);
    assert.deepEqual(five(r), [1, 3, 0, 60, 180]);
    assert.equal(r.allowed, false);
    assert.ok(Object.isFrozen(r));

    // quantity and MS
    r = await limiter.throttle(p + 'tms', 9, 10, 1000, { quantity: 5, ms: true });
    assert.deepEqual(five(r), [0, 10, 5, -1, 500]);
    r = await limiter.slide(p + 's', 10, 60, { quantity: 3 });
    assert.deepEqual(five(r), [0, 10, 7, -1, 60]);
    r = await limiter.slide(p + 'sp', 1000, 3600, { precision: 36 });
    assert.deepEqual(five(r), [0, 1000, 999, -1, 3600]);
    r = await limiter.slice(p + 'c', 100, 60, 12);
    assert.deepEqual(five(r).slice(0, 4), [0, 100, 99, -1]);
    assert.ok(r.resetAfter >= 61 && r.resetAfter <= 65);
    r = await limiter.quota(p + 'q', 1000, 'DAY', { tz: 'America/Sao_Paulo', quantity: 2 });
    assert.deepEqual(five(r).slice(0, 4), [0, 1000, 998, -1]);
    assert.ok(r.resetAfter >= 1 && r.resetAfter <= 86400);

    // RL.LEASE / RL.RELEASE
    r = await limiter.lease(p + 'l', 2, 30, 'job-17');
    assert.deepEqual(five(r), [0, 2, 1, -1, 30]);
    await limiter.lease(p + 'l', 2, 30, 'job-18');
    r = await limiter.lease(p + 'l', 2, 30, 'job-19');
    assert.equal(r.limited, true);
    assert.ok(r.retryAfter >= 29 && r.retryAfter <= 30);
    assert.equal(await limiter.release(p + 'l', 'job-17'), true);
    assert.equal(await limiter.release(p + 'l', 'job-17'), false);

    // Limits as values: alone (take), and as RL.ALLOW's entries.
    r = await limiter.take(p + 'v', slide(10, 60, { precision: 1 }), { quantity: 2 });
    assert.deepEqual(five(r), [0, 10, 8, -1, 60]);
    r = await limiter.take(p + 'vq', quota(5, 'HOUR', { tz: '+05:30' }));
    assert.deepEqual(five(r).slice(0, 4), [0, 5, 4, -1]);
    r = await limiter.take(p + 'vl', lease(1, 60), { id: 'a' });
    assert.deepEqual(five(r), [0, 1, 0, -1, 60]);
    const u = `${p}{user:42}:`;
    const entries = [[u + 's', slide(10, 1)], [u + 'm', slice(100, 60, 12)], { key: u + 't', limit: throttle(2, 1, 60) },
      [u + 'l', lease(2, 30)]];
    const a = await limiter.allow(entries, { id: 'job-20' });
    assert.equal(a.limited, false);
    assert.equal(a.results.length, 4);
    assert.deepEqual(five(a.results[0]), [0, 10, 9, -1, 1]);
    assert.deepEqual(five(a.results[2]), [0, 3, 2, -1, 60]);
    assert.deepEqual(five(a.results[3]), [0, 2, 1, -1, 30]);
    assert.equal(a.index, 4); // 1-based: the lease: least remaining (1), longest reset
    assert.deepEqual(five(a), five(a.results[3]));
    assert.equal(a.binding, a.results[3]);
    const peek = await limiter.peek(entries.slice(0, 3), { quantity: 3 });
    assert.equal(peek.limited, true);
    assert.equal(peek.index, 3);
    assert.deepEqual(five(peek.results[2]), [1, 3, 2, 60, 60]);
    const after = await limiter.inspect(u + 't');
    assert.equal(after.type, 'throttle'); // RL.PEEK changed nothing:
    assert.ok(after.tatAheadMs > 59000 && after.tatAheadMs <= 60000);

    // RL.INSPECT, every kind
    const s = await limiter.inspect(p + 's');
    assert.equal(s.type, 'slide');
    assert.equal(s.units, 3);
    assert.equal(s.entries, 1);
    assert.ok(s.ttl > 59000 && s.ttl <= 60000 && s.memory > 0);
    assert.ok(s.oldestAgeMs >= 0 && s.newestAgeMs >= 0);
    const c = await limiter.inspect(p + 'c');
    assert.equal(c.type, 'slice');
    assert.equal(c.windowMs, 60000);
    assert.equal(c.slices, 12);
    assert.equal(c.units, 1);
    assert.equal(c.counts.length, 13);
    assert.equal(c.counts[0], 1);
    assert.ok(c.headAgeMs >= 0);
    const l = await limiter.inspect(p + 'l');
    assert.equal(l.type, 'lease');
    assert.equal(l.held, 1);
    assert.equal(l.leases, 1);
    assert.equal(l.holders[0].leaseId, 'job-18');
    assert.equal(l.holders[0].weight, 1);
    assert.ok(l.holders[0].ttlMs > 0);
    const q = await limiter.inspect(p + 'q');
    assert.equal(q.type, 'quota');
    assert.equal(q.unit, 'day');
    assert.equal(q.zone, 'America/Sao_Paulo');
    assert.equal(q.used, 2);
    assert.ok(q.end > q.start);
    const th = await limiter.inspect(p + 't');
    assert.ok(th.tatUnixMs > Date.now());
    assert.equal(await limiter.inspect(p + 'nothing'), null);

    // RL.REFUND
    r = await limiter.refund(p + 's', slide(10, 60), 5);
    assert.deepEqual(five(r), [0, 10, 10, -1, 0]);
    assert.equal(await raw(srv.port, 'EXISTS', p + 's'), 0);
    r = await limiter.refund(p + 'tms', throttle(9, 10, 1000, { ms: true }), 5);
    assert.deepEqual(five(r), [0, 10, 10, -1, 0]);
  });

  test(`errors through ${name}, ${backend} backend: ERR as ArgumentError naming the argument, WRONGTYPE as WrongTypeError`, async (t) => {
    const client = await make((backend === 'module' ? server : bare).port);
    t.after(() => close(client));
    const limiter = new RateLimiter(client);
    assert.equal((await limiter.backend()).kind, backend);
    const p = `rl:err:${name}:`;
    const cases = [
      [() => limiter.throttle(p + 'a', 2, 1, 0), 'period', undefined, 'period must be an integer from 1 to 315360000 (seconds)'],
      [() => limiter.slide(p + 'a', 0, 60), 'limit', undefined, undefined],
      [() => limiter.slice(p + 'a', 10, 60, 0), 'slices', undefined, 'slices must be an integer from 1 to 86400'],
      [() => limiter.lease(p + 'a', 5, 30, ''), 'lease_id', undefined, 'lease_id must be 1 to 128 bytes'],
      [() => limiter.quota(p + 'a', 10, 'DAY', { tz: 'Mars/Olympus' }), 'TZ', undefined, "unknown time zone 'Mars/Olympus'"],
      [() => limiter.quota(p + 'a', 10, 'FORTNIGHT'), 'unit', undefined, undefined],
      [() => limiter.slide(p + 'a', 10, 60, { precision: 61 }), 'PRECISION', undefined, 'PRECISION must be at most the window'],
      [() => limiter.allow([[p + 'a', slide(1, 1)], [p + 'b', slide(1, 0)]]), 'window', 2,
        'spec 2 (SLIDE): window must be an integer from 1 to 315360000 (seconds)'],
      [() => limiter.allow([[p + 'a', slide(1, 1)], [p + 'a', slide(1, 1)]]), 'key', undefined, "key 'rl:err:" + name + ":a' is given more than once"],
      [() => limiter.allow([]), 'arguments', undefined, undefined],
      [() => limiter.allow([[p + 'a', lease(5, 30)]]), 'ID', undefined, 'a LEASE spec needs the ID option: ID lease_id'],
      [() => limiter.allow([[p + 'a', slide(1, 1)]], { id: 'x' }), 'ID', undefined, 'ID is given but no spec takes it'],
      [() => limiter.refund(p + 'a', lease(1, 60), 1), 'spec', undefined, 'RL.REFUND does not take a LEASE spec'],
      [() => limiter.take(p + 'a', lease(1, 60)), 'lease_id', undefined, undefined],
    ];
    for (const [call, argument, spec, text] of cases) {
      await assert.rejects(call, (err) => {
        assert.ok(err instanceof ArgumentError, `${err.name}: ${err.message}`);
        assert.ok(err instanceof rl.RateLimitError);
        assert.equal(err.argument, argument, err.message);
        assert.equal(err.spec, spec, err.message);
        if (text) assert.equal(err.message, text);
        return true;
      });
    }
    await limiter.throttle(p + 'typed', 1, 1, 1);
    await assert.rejects(() => limiter.slide(p + 'typed', 1, 1), WrongTypeError);
    await assert.rejects(() => limiter.refund(p + 'typed', slide(1, 1), 1), WrongTypeError);
    await assert.rejects(() => limiter.allow([[p + "x", slide(1, 1)], [p + "y", slide(1, 1000, { ms: true })]]), TypeError);
  });
}

test('the parser of ERR texts names the argument', () => {
  const cases = [
    ['ERR unknown argument \'SOON\'', 'SOON', undefined],
    ['ERR (max_burst + 1) x period / count must be at most 3153600000 seconds (100 years)', 'period', undefined],
    ['ERR spec 2: unknown algorithm \'LEAKY\' (expected THROTTLE, SLIDE, SLICE, LEASE or QUOTA)', 'spec', 2],
    ['ERR spec 2 is missing: 2 keys need 2 specs', 'spec', 2],
    ['ERR QUANTITY is given more than once', 'QUANTITY', undefined],
    ['ERR spec 2 (QUOTA): expects limit unit [TZ value]', 'spec', 2],
    ['ERR time zone offset \'+18:30\' is out of range (-18:00 to +18:00)', 'TZ', undefined],
    ['ERR quantity must be an integer from 0 to 1000000000000', 'quantity', undefined],
  ];
  for (const [text, argument, spec] of cases) assert.deepEqual(rl.parseArgument(text), { argument, spec }, text);
});

test('the backend: detected once; forced; the module missing', async (t) => {
  const Redis = require('ioredis');
  const client = new Redis(server.port, '127.0.0.1');
  t.after(() => client.disconnect());
  const limiter = new RateLimiter(client);
  const backend = await limiter.backend();
  assert.equal(backend.kind, 'module');
  assert.equal(backend.prefix.toUpperCase(), 'RL');
  assert.equal(await limiter.backend(), backend);
  assert.equal(await new RateLimiter(client).backend(), backend); // detected once per client
  assert.equal((await rl.detectPrefix(limiter.connection)).toUpperCase(), 'RL');
  // Forced: the Lua backend beside the loaded module, on a key of its own.
  const forced = new RateLimiter(client, { backend: 'lua' });
  assert.equal((await forced.backend()).kind, 'lua');
  assert.deepEqual(five(await forced.throttle('rl:forced', 1, 1, 60)), [0, 2, 1, -1, 60]);
  assert.equal(await raw(server.port, 'TYPE', 'rl:forced'), 'string');
  // A forced prefix is used as given: a wrong one gets the server's unknown command.
  await assert.rejects(new RateLimiter(client, { backend: 'module', prefix: 'NOPE' }).throttle('k', 1, 1, 1),
    /unknown command/i);

  const other = new Redis(bare.port, '127.0.0.1');
  t.after(() => other.disconnect());
  assert.equal((await new RateLimiter(other).backend()).kind, 'lua');
  assert.equal((await new RateLimiter(other, { backend: 'lua' }).backend()).kind, 'lua');
  await assert.rejects(new RateLimiter(other, { backend: 'module' }).throttle('k', 1, 1, 1), (err) => {
    assert.ok(err instanceof BackendUnavailableError);
    assert.match(err.message, /not loaded .*backend: 'lua'/);
    return true;
  });
});
