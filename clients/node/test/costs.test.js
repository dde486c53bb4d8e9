// Round 5's calls on both backends (the module; the Lua backend on a server
// without it): the spec words of BLOCK, UNITS and SHADOW; RL.CHARGE and
// settle (every command sent before a reply is read); UNITS in the LLM
// case; BLOCK; SHADOW; RL.TOP; acquire and acquireAll over MAXWAIT (a
// turn waited on a timer, refused beyond the wait or the deadline, given
// back when aborted).
'use strict';

const assert = require('node:assert/strict');
const { test, before, after } = require('node:test');
const { installedPackage, Server, raw, clients } = require('./helpers');

const rl = installedPackage();
const { RateLimiter, connectionOf, throttle, slide, slice, lease, quota, ArgumentError, RateLimitedError } = rl;
const Redis = require('ioredis');

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

const five = (r) => [r.limited ? 1 : 0, r.limit, r.remaining, r.retryAfter, r.resetAfter];

// The connection of `client`, recording each command line sent and, in
// `events`, each send and reply in order.
function recording(client) {
  const real = connectionOf(client);
  const lines = [];
  const events = [];
  return {
    lines,
    events,
    connection: {
      client,
      kind: real.kind,
      isCluster: real.isCluster,
      send(args, route, read) {
        const line = args.map((a) => (Buffer.isBuffer(a) ? a.toString('latin1') : String(a)));
        lines.push(line);
        events.push(['send', line[0]]);
        return real.send(args, route, read).finally(() => events.push(['reply', line[0]]));
      },
    },
  };
}

test('spec words: [BLOCK b] [UNITS n] [SHADOW] after the spec; RL.REFUND/RL.CHARGE without them', () => {
  const t = throttle(9, 10, 60, { block: 30, units: 5, shadow: true });
  assert.deepEqual(t.spec(), ['THROTTLE', '9', '10', '60', 'BLOCK', '30', 'UNITS', '5', 'SHADOW']);
  assert.deepEqual(t.baseSpec(), ['THROTTLE', '9', '10', '60']);
  assert.deepEqual(slide(10, 60, { precision: 5, block: 9 }).spec(), ['SLIDE', '10', '60', 'PRECISION', '5', 'BLOCK', '9']);
  assert.deepEqual(slice(10, 60, 6, { units: 0n }).spec(), ['SLICE', '10', '60', '6', 'UNITS', '0']);
  assert.deepEqual(quota(5, 'DAY', { tz: 'UTC', block: 60, shadow: true }).spec(),
    ['QUOTA', '5', 'DAY', 'TZ', 'UTC', 'BLOCK', '60', 'SHADOW']);
  assert.deepEqual(quota(5, 'DAY', { tz: 'UTC', block: 60 }).baseSpec(), ['QUOTA', '5', 'DAY', 'TZ', 'UTC']);
  assert.deepEqual(lease(4, 120, { units: 2, shadow: true }).spec(), ['LEASE', '4', '120', 'UNITS', '2', 'SHADOW']);
  assert.equal(t.with({ shadow: false }).shadow, false);
  assert.deepEqual(t.with({ shadow: false }).spec(), ['THROTTLE', '9', '10', '60', 'BLOCK', '30', 'UNITS', '5']);
  // acquire's unit conversion: seconds to ms, nothing else.
  assert.deepEqual(t.inMs().spec(), ['THROTTLE', '9', '10', '60000', 'BLOCK', '30000', 'UNITS', '5', 'SHADOW']);
  assert.equal(t.inMs().ms, true);
  assert.deepEqual(slide(10, 60, { precision: 5 }).inMs().spec(), ['SLIDE', '10', '60000', 'PRECISION', '5000']);
  const already = throttle(1, 1, 500, { ms: true });
  assert.equal(already.inMs(), already);
  assert.throws(() => throttle(1, 1, 1.5).inMs(), /period 1.5 is not a whole number of seconds/);
});

for (const backend of ['module', 'lua']) {
  const srv = () => (backend === 'module' ? server : bare);
  const limiterOf = (t) => {
    const redis = new Redis(srv().port, '127.0.0.1');
    t.after(() => redis.disconnect());
    return new RateLimiter(redis);
  };

  test(`RL.CHARGE: a debt refuses until paid back (${backend})`, async (t) => {
    const limiter = limiterOf(t);
    assert.equal((await limiter.backend()).kind, backend);
    const limit = throttle(4, 5, 60); // one per 12 s, bursts of 5
    const charged = await limiter.charge('rl:c:t', limit, 8);
    assert.deepEqual([charged.remaining, charged.resetAfter], [0, 96]);
    const r = await limiter.throttle('rl:c:t', 4, 5, 60);
    assert.deepEqual(five(r), [1, 5, 0, 48, 96]);
    const s = await limiter.charge('rl:c:s', slide(10, 60), 3);
    assert.deepEqual(five(s).slice(0, 3), [0, 10, 7]);
    await assert.rejects(limiter.charge('rl:c:l', lease(2, 30), 1), ArgumentError);
  });

  for (const [name, make, close] of clients()) test(`settle through ${name}: refund, nothing, charge; every command sent before a reply (${backend})`, async (t) => {
    const redis = await make(srv().port);
    t.after(() => close(redis));
    const rec = recording(redis);
    const limiter = new RateLimiter(rec.connection);
    const entries = [
      [`rl:{s}:slide:${name}`, slide(100, 60)],
      [`rl:{s}:quota:${name}`, quota(1000, 'DAY')],
      [`rl:{s}:slice:${name}`, slice(100, 60, 6)],
    ];
    const a = await limiter.allow(entries, { quantity: 10 });
    assert.equal(a.limited, false);
    // Warm the scripts (EVAL after NOSCRIPT would be a second trip).
    await limiter.settle(entries, 10, [10, 10, 11]);
    await limiter.settle(entries, 10, [10, 10, 9]);
    rec.events.length = 0;
    rec.lines.length = 0;
    const results = await limiter.settle(entries, 10, [4, 10, 15]);
    assert.equal(results.length, 3);
    assert.equal(results[1], null);
    assert.equal(results[0].remaining, 96); // 10 taken, 6 given back
    assert.equal(results[2].remaining, 85); // 10 taken, 5 charged
    const sent = rec.events.filter(([e]) => e === 'send').length;
    assert.equal(sent, 2);
    assert.deepEqual(rec.events.slice(0, 2).map(([e]) => e), ['send', 'send'], 'both sent before the first reply');
    if (backend === 'module') {
      assert.deepEqual(rec.lines, [
        ['RL.REFUND', `rl:{s}:slide:${name}`, 'SLIDE', '100', '60', '6'],
        ['RL.CHARGE', `rl:{s}:slice:${name}`, 'SLICE', '100', '60', '6', '5'],
      ]);
    } else {
      assert.deepEqual(rec.lines.map((l) => l[0]), ['EVALSHA', 'EVALSHA']);
    }
    await assert.rejects(limiter.settle(entries, [1, 2], 3), /settle: 2 taken for 3 limits/);
    await assert.rejects(limiter.settle(entries, 1.5, 3), /settle: taken 1.5 is not an integer/);
  });

  test(`UNITS: the LLM case in one RL.ALLOW, then settled with the usage (${backend})`, async (t) => {
    const limiter = limiterOf(t);
    // Tokens a day (a minute's would refill between the calls).
    const tpm = throttle(99999, 100000, 86400);
    const entries = [
      ['{u1}:lease', lease(4, 120)],
      ['{u1}:rpm', throttle(60, 60, 60)],
      ['{u1}:tpm', tpm.with({ units: 1500 })],
    ];
    const r = await limiter.allow(entries, { id: 'req-7' });
    assert.equal(r.limited, false);
    assert.deepEqual(r.results.map((x) => x.remaining), [3, 60, 100000 - 1500]);
    // 1500 estimated, 1800 used: 300 charged.
    const [settled] = await limiter.settle([['{u1}:tpm', tpm]], 1500, 1800);
    assert.equal(settled.remaining, 100000 - 1800);
    // A limit whose units are 0 is not taken from.
    const peekish = await limiter.allow([['{u1}:tpm', tpm.with({ units: 0 })], ['{u1}:rpm', throttle(60, 60, 60)]]);
    assert.deepEqual(peekish.results.map((x) => x.remaining), [100000 - 1800, 59]);
    // undo (decide's give-back, refund5xx) gives back a limit's own units.
    const given = [['{u1}:s', slide(10, 60, { units: 4 })], ['{u1}:z', slide(10, 60, { units: 0 })]];
    await limiter.allow(given);
    assert.equal((await limiter.inspect('{u1}:s')).units, 4);
    await limiter.undo(given, [0, 1]);
    assert.equal(await limiter.inspect('{u1}:s'), null);
    await assert.rejects(limiter.take('{u1}:rpm', throttle(60, 60, 60, { units: 2 })), (err) => {
      assert.ok(err instanceof ArgumentError);
      assert.equal(err.argument, 'UNITS');
      return true;
    });
  });

  test(`BLOCK: a refusal blocks the key; RL.INSPECT shows blockedUntil (${backend})`, async (t) => {
    const limiter = limiterOf(t);
    const limit = slide(1, 60, { block: 600 });
    assert.equal((await limiter.take('rl:b:s', limit)).limited, false);
    const refused = await limiter.take('rl:b:s', limit);
    assert.deepEqual(five(refused), [1, 1, 0, 600, 600]);
    const state = await limiter.inspect('rl:b:s');
    assert.ok(state.blockedUntil > Date.now() + 590_000, `blockedUntil ${state.blockedUntil}`);
    // A method's own BLOCK option.
    await limiter.throttle('rl:b:t', 0, 1, 60, { block: 300 });
    const t2 = await limiter.throttle('rl:b:t', 0, 1, 60, { block: 300 });
    assert.deepEqual([t2.limited, t2.retryAfter], [true, 300]);
    // In RL.ALLOW, the blocked key refuses the call.
    const a = await limiter.allow([['rl:b:a', slide(100, 60)], ['rl:b:s', slide(100, 60)]]);
    assert.deepEqual([a.limited, a.index, a.retryAfter], [true, 2, 600]);
    await assert.rejects(limiter.allow([['rl:b:q', quota(1, 'DAY', { block: 0 })]]),
      /: spec 1 \(QUOTA\): BLOCK must be an integer from 1 to 315360000 \(seconds\)$/);
    await assert.rejects(limiter.allow([['rl:b:l', lease(1, 60).with({ block: 5 })]], { id: 'x' }),
      /: spec 1 \(LEASE\): LEASE takes no BLOCK$/);
  });

  test(`SHADOW: decided, never refusing; all SHADOW refused by the module (${backend})`, async (t) => {
    const limiter = limiterOf(t);
    const entries = [['rl:{sh}:on', slide(100, 60)], ['rl:{sh}:new', slide(1, 60, { shadow: true })]];
    assert.equal((await limiter.allow(entries)).limited, false);
    const r = await limiter.allow(entries);
    assert.equal(r.limited, false);
    assert.equal(r.index, 1);
    assert.equal(r.results[1].limited, true);
    assert.equal(r.results[0].remaining, 98);
    // The shadow key holds what enforcing it alone would have: one unit.
    assert.equal((await limiter.inspect('rl:{sh}:new')).units, 1);
    await assert.rejects(limiter.allow([['rl:{sh}:new', slide(1, 60, { shadow: true })]]), (err) => {
      assert.match(err.message, /at least one spec must be enforced: every spec is SHADOW/);
      assert.equal(err.argument, 'SHADOW');
      return true;
    });
    // decideShadow: the all-SHADOW case, each limit alone.
    const s = await limiter.decideShadow([['rl:{sh}:new', slide(1, 60, { shadow: true })], ['rl:{sh}:x', slide(5, 60, { shadow: true })]]);
    assert.deepEqual(s.results.map((x) => x.limited), [true, false]);
    assert.deepEqual(s.taken, [1]);
  });

  test(`RL.TOP: the refused keys on the module, the scripts' error on Lua (${backend})`, async (t) => {
    const limiter = limiterOf(t);
    for (let i = 0; i < 5; i++) await limiter.throttle('rl:top:hot', 0, 1, 60);
    if (backend === 'module') {
      const top = await limiter.top(5);
      const hot = top.find((e) => e.key === 'rl:top:hot');
      assert.ok(hot, JSON.stringify(top));
      // 4 refusals, decayed (half-life 60 s) and rounded down.
      assert.ok(hot.refusals >= 3 && hot.refusals <= 4, `refusals ${hot.refusals}`);
      assert.ok(Math.abs(hot.lastRefusalMs - Date.now()) < 5000);
      await assert.rejects(limiter.top(0), /COUNT must be an integer from 1 to 128/);
    } else {
      await assert.rejects(limiter.top(), (err) => {
        assert.ok(err instanceof ArgumentError, err.name);
        assert.equal(err.message, 'RL.TOP needs the module: the Lua backend keeps no summary of refusals');
        return true;
      });
    }
  });

  test(`acquire: turns on a timer, refused beyond the wait, the deadline, an abort (${backend})`, async (t) => {
    const redis = new Redis(srv().port, '127.0.0.1');
    t.after(() => redis.disconnect());
    const rec = recording(redis);
    const limiter = new RateLimiter(rec.connection);
    const limit = throttle(0, 10, 1); // one per 100 ms, no burst
    const key = `rl:acq:${backend}`;
    await limiter.backend();
    rec.lines.length = 0;
    const started = Date.now();
    const first = await limiter.acquire(key, limit, 1000);
    assert.equal(first.retryAfter, 0);
    if (backend === 'module') assert.deepEqual(rec.lines[0], ['RL.THROTTLE', key, '0', '10', '1000', 'MS', 'MAXWAIT', '1000']);
    const second = await limiter.acquire(key, limit, 1000);
    assert.ok(second.retryAfter >= 1 && second.retryAfter <= 100, `waited ${second.retryAfter}`);
    assert.ok(Date.now() - started >= second.retryAfter, 'the turn was waited for');
    // One a minute: the next turn is a minute away, beyond 10 ms of wait.
    const slow = throttle(0, 1, 60);
    await limiter.acquire(key + ':slow', slow, 10);
    await assert.rejects(limiter.acquire(key + ':slow', slow, 10), (err) => {
      assert.ok(err instanceof RateLimitedError, err.name);
      assert.ok(err.retryAfter > 59000 && err.retryAfter <= 60000, `retryAfter ${err.retryAfter}`);
      assert.equal(err.result.limited, true);
      return true;
    });
    // A deadline 20 ms away asks MAXWAIT 20 at most.
    await assert.rejects(limiter.acquire(key + ':slow', slow, 120_000, { deadline: Date.now() + 20 }), RateLimitedError);
    const asked = rec.lines.filter((l) => l[0] === 'RL.THROTTLE').at(-1);
    if (backend === 'module') assert.ok(Number(asked[7]) <= 20, `MAXWAIT ${asked[7]}`);
    // Aborted while waiting (one a second: a turn ~1 s away): the turn is
    // given back, so the next one is no further.
    const second1 = throttle(0, 1, 1);
    await limiter.acquire(key + ':1s', second1, 10);
    const controller = new AbortController();
    const waiting = limiter.acquire(key + ':1s', second1, 5000, { signal: controller.signal });
    setTimeout(() => controller.abort(new Error('gone')), 10);
    await assert.rejects(waiting, /gone/);
    const after = await limiter.acquire(key + ':1s', second1, 5000);
    assert.ok(after.retryAfter <= 1000, `the aborted turn was given back: waited ${after.retryAfter}`);
  });

  test(`acquireAll: one RL.ALLOW, the longest wait (${backend})`, async (t) => {
    const limiter = limiterOf(t);
    const entries = [[`rl:{all}:fast`, throttle(0, 20, 1)], [`rl:{all}:slow`, throttle(0, 10, 1)]];
    const first = await limiter.acquireAll(entries, 1000);
    assert.equal(first.retryAfter, 0);
    const second = await limiter.acquireAll(entries, 1000);
    assert.equal(second.index, 2, 'the slower limit binds');
    assert.ok(second.retryAfter >= 1 && second.retryAfter <= 100, `waited ${second.retryAfter}`);
    // One a minute behind a fast limit: refused beyond 5 ms, by the slow one.
    const slow = [[`rl:{all}:f2`, throttle(0, 20, 1)], [`rl:{all}:m`, throttle(0, 1, 60)]];
    await limiter.acquireAll(slow, 5);
    await assert.rejects(limiter.acquireAll(slow, 5), (err) => {
      assert.ok(err instanceof RateLimitedError, err.name);
      assert.equal(err.key, 'rl:{all}:m');
      assert.ok(err.retryAfter > 59000, `retryAfter ${err.retryAfter}`);
      return true;
    });
    await assert.rejects(limiter.acquireAll([['rl:{all}:s', slide(1, 1)]], 5), /MAXWAIT takes THROTTLE limits only: spec 1 is SLIDE/);
  });
}

test('RL.TOP: most refused first, as another client refused them', async () => {
  // The module's summary of refusals another client caused: the package only reads it.
  for (let i = 0; i < 6; i++) await raw(server.port, 'RL.THROTTLE', 'rl:top:raw:a', 0, 1, 60);
  for (let i = 0; i < 3; i++) await raw(server.port, 'RL.THROTTLE', 'rl:top:raw:b', 0, 1, 60);
  const redis = new Redis(server.port, '127.0.0.1');
  try {
    const top = (await new RateLimiter(redis).top(128)).map((e) => e.key).filter((k) => k.startsWith('rl:top:raw:'));
    assert.deepEqual(top, ['rl:top:raw:a', 'rl:top:raw:b']);
  } finally {
    redis.disconnect();
  }
});

test('the manifest\'s keys "none": KEYS empty, ARGV the head and every argument', async (t) => {
  const fs = require('node:fs');
  const os = require('node:os');
  const path = require('node:path');
  const { executeLua } = rl;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rl-lua-none-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  // A script that answers what it was given.
  fs.writeFileSync(path.join(dir, 'ratelimit.lua'), 'local out = {#KEYS}\nfor _, k in ipairs(KEYS) do out[#out + 1] = k end\n' +
    "out[#out + 1] = '|'\nfor _, a in ipairs(ARGV) do out[#out + 1] = a end\nreturn out\n");
  fs.writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify({ commands: {
    'RL.TOP': { prefix: '-- top\n', keys: 'none', readonly: true },
    'RL.CHARGE': { prefix: '-- charge\n', keys: 'first', readonly: false },
  } }));
  const redis = new Redis(bare.port, '127.0.0.1');
  t.after(() => redis.disconnect());
  assert.deepEqual(await executeLua(redis, ['RL.TOP', 'COUNT', 5], { luaDir: dir }), [0, '|', '', 'COUNT', '5']);
  assert.deepEqual(await executeLua(redis, ['RL.TOP'], { luaDir: dir }), [0, '|', '']);
  assert.deepEqual(await executeLua(redis, ['RL.CHARGE', 'k', 'SLIDE', 1, 60, 2], { luaDir: dir }),
    [1, 'k', '|', '', 'SLIDE', '1', '60', '2']);
});
