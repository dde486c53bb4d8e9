// Several limits on one request, with RL.ALLOW, for ioredis.
//
// A policy is a list of limits, each a policy name, a key template and a
// spec, written as in RL.ALLOW:
//
//   user      rl:{user:$client}:m    SLIDE 100 60
//   ip        rl:ip:$ip              THROTTLE 59 60 60
//   endpoint  rl:endpoint:$path      SLICE 1000 60 6
//   inflight  rl:{user:$client}:c    LEASE 10 60
//
// The first three are rate limits: a request takes a unit that comes back
// with time. The last is a concurrency limit (at most 10 requests in flight
// per client): a request takes a slot, a lease named leaseId (a fresh one
// per request), that it holds until release() gives it back; if nobody
// ever does (the process that took it crashed), the lease expires ttl
// seconds after it was taken. So ttl must be longer than the longest
// request: one still running after it no longer counts.
//
// allow() asks for one unit (or slot) of every limit at once and answers
// with the fields of each limit and the index of the binding one (the one
// whose numbers belong in the response's headers):
//
// - On a single server every key lives on it, so it is one RL.ALLOW:
//   atomic, all or nothing.
// - On Redis Cluster one RL.ALLOW can only name keys of one hash slot. With
//   groupBySlot the limits are grouped by the slot of their key (keys that
//   share a hash tag such as {user:42} share a slot), and each group is one
//   RL.ALLOW, in the order of the limits. When a group refuses, the groups
//   before it took their units already: allow() gives them back with
//   RL.REFUND (leases with RL.RELEASE), and peeks (RL.PEEK) at the groups
//   after it so that the binding limit is the one a single RL.ALLOW would
//   have named. Nothing stays counted for a refused request; a concurrent
//   request may see the units of the earlier groups during the moment
//   between the take and the give-back.
//
// giveBack() returns the units of an allowed request, for instance when the
// handler failed (RL.REFUND, one call per rate limit); release() its leases
// (RL.RELEASE, one call per concurrency limit), when its response is over.
// A request refused by a later slot group gets both from allow().
//
// Both take an optional deadline (a Date.now() instant): each command times
// out at the deadline (ioredis rejects it with "Command timed out"), and a
// command that would start after it is not sent, so that a caller that gave
// up waiting leaves nothing behind that it did not see.
'use strict';

const { Command } = require('ioredis');

// The numbers each algorithm's spec takes, as in RL.ALLOW.
const ALGORITHMS = {
  THROTTLE: ['max_burst', 'count', 'period'],
  SLIDE: ['limit', 'window'],
  SLICE: ['limit', 'window', 'slices'],
  LEASE: ['limit', 'ttl'],
};
// What a key template may name; render() substitutes the request's values.
const VARIABLES = ['client', 'ip', 'path', 'method'];
const VARIABLE = /\$([a-z]+)/g;
const FIELDS = ['limited', 'limit', 'remaining', 'retryAfter', 'resetAfter'];

// [limited, limit, remaining, retry_after, reset_after] -> { limited, ... }
function named(reply) {
  return Object.fromEntries(FIELDS.map((name, i) => [name, Number(reply[i])]));
}

class Limit {
  constructor(name, key, spec) {
    this.name = name; // the policy name in the RateLimit header fields
    this.key = key; // the key template
    this.spec = spec; // ['SLIDE', 100, 60]: the algorithm and its numbers
  }

  // A concurrency limit: what a request takes is a lease, held until
  // release() (or its ttl), not a unit that comes back with time.
  get isLease() {
    return this.spec[0] === 'LEASE';
  }

  // The policy's window in seconds, the w of RateLimit-Policy whose q is the
  // limit that the commands reply (the capacity). SLIDE and SLICE: their
  // window. THROTTLE: the time its capacity takes to refill, capacity x
  // period / count rounded up, so that q / w is its rate (count per period)
  // and q its burst; its period would announce capacity units per period, a
  // rate (max_burst + 1) / count times the real one. (BigInt: the product
  // can exceed 2^53.) LEASE: none (undefined), a number in flight has no
  // window (its ttl is how long a lease lasts when nobody releases it).
  get window() {
    const [algorithm, ...numbers] = this.spec;
    if (algorithm === 'LEASE') return undefined;
    if (algorithm === 'THROTTLE') {
      const [maxBurst, count, period] = numbers.map(BigInt);
      const w = ((maxBurst + 1n) * period + count - 1n) / count;
      return Number(w > 1n ? w : 1n);
    }
    return numbers[ALGORITHMS[algorithm].indexOf('window')];
  }

  // The key for one request: $client and the others replaced.
  render(values) {
    return this.key.replace(VARIABLE, (_, name) => values[name]);
  }
}

// `name key ALGORITHM n ...` entries separated by `;`.
function parseLimits(text) {
  const limits = [];
  for (const entry of text.split(';')) {
    const words = entry.trim().split(/\s+/).filter(Boolean);
    if (words.length === 0) continue;
    if (words.length < 3) {
      throw new Error(`limit ${JSON.stringify(entry.trim())}: expected \`name key ALGORITHM numbers...\``);
    }
    const [name, key, word, ...numbers] = words;
    const algorithm = word.toUpperCase();
    const expected = ALGORITHMS[algorithm];
    if (!expected) {
      throw new Error(`limit ${name}: unknown algorithm ${word} (expected ${Object.keys(ALGORITHMS).join(', ')})`);
    }
    if (numbers.length !== expected.length) {
      throw new Error(`limit ${name}: ${algorithm} takes ${expected.join(' ')}`);
    }
    if (!numbers.every((n) => /^[0-9]+$/.test(n))) {
      throw new Error(`limit ${name}: ${expected.join(' ')} must be whole numbers`);
    }
    for (const [, variable] of key.matchAll(VARIABLE)) {
      if (!VARIABLES.includes(variable)) {
        throw new Error(
          `limit ${name}: unknown $${variable} in ${key} (expected ${VARIABLES.map((v) => '$' + v).join(', ')})`,
        );
      }
    }
    limits.push(new Limit(name, key, [algorithm, ...numbers.map(Number)]));
  }
  if (limits.length === 0) throw new Error('no limit given');
  if (limits.length > 16) throw new Error('at most 16 limits: RL.ALLOW takes 1 to 16 keys');
  const names = limits.map((l) => l.name);
  if (new Set(names).size !== names.length) throw new Error(`policy names must differ: ${names.join(', ')}`);
  return limits;
}

// CRC16 as Redis Cluster computes it (CCITT polynomial 0x1021, initial value 0).
function crc16(bytes) {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) {
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    }
  }
  return crc;
}

// The Redis Cluster hash slot of a key: CRC16 of the key, or of its hash tag
// (the part between the first "{" and the first "}" after it, when not
// empty), modulo 16384. (Not ioredis's cluster-key-slot 1.1.1: it takes
// the slot of "foo{}{bar}" from "{bar" where Redis hashes the whole key.)
function keyslot(key) {
  let bytes = Buffer.from(key);
  const open = bytes.indexOf(0x7b);
  if (open >= 0) {
    const close = bytes.indexOf(0x7d, open + 1);
    if (close > open + 1) bytes = bytes.subarray(open + 1, close);
  }
  return crc16(bytes) % 16384;
}

// The indices of keys grouped by hash slot, each group and the groups in
// the order of their first key.
function slotGroups(keys) {
  const groups = new Map();
  keys.forEach((key, i) => {
    const slot = keyslot(key);
    if (!groups.has(slot)) groups.set(slot, []);
    groups.get(slot).push(i);
  });
  return [...groups.values()];
}

// RL.ALLOW's binding limit, from the fields of every limit: when any is
// limited, the limited one with the largest retryAfter (one that can never
// fit, retryAfter -1, counts as largest); otherwise the one with the least
// remaining, then the largest resetAfter. Further ties: the lower index.
// (The server compares exact times; this compares the rounded ones.)
function binding(fields) {
  const anyLimited = fields.some((f) => f.limited);
  const retry = (f) => (f.retryAfter < 0 ? Infinity : f.retryAfter);
  let best = -1;
  fields.forEach((f, i) => {
    if (anyLimited && !f.limited) return;
    const b = fields[best];
    const better =
      best < 0 ||
      (anyLimited
        ? retry(f) > retry(b)
        : f.remaining < b.remaining || (f.remaining === b.remaining && f.resetAfter > b.resetAfter));
    if (better) best = i;
  });
  return best;
}

// One command, by the deadline when there is one, and sent to the node of
// `slot` on a cluster: ioredis does not know where a module command's keys
// are, and would send it to any node and follow the MOVED reply.
function send(redis, slot, name, args, deadline) {
  const command = new Command(name, args, { replyEncoding: 'utf8' });
  if (deadline !== undefined) {
    const left = deadline - Date.now();
    if (left <= 0) return Promise.reject(new Error('deadline passed'));
    command.setTimeout(left); // instead of the client's commandTimeout
  }
  if (redis.isCluster) command.slot = slot;
  redis.sendCommand(command);
  return command.promise;
}

// One RL.ALLOW or RL.PEEK of the limits in group. RL.ALLOW takes the
// leases of its LEASE limits as leaseId; RL.PEEK, without an ID, asks
// whether a new lease would fit.
async function several(redis, command, limits, keys, group, quantity, deadline, leaseId) {
  const args = [group.length, ...group.map((i) => keys[i])];
  for (const i of group) args.push(...limits[i].spec);
  args.push('QUANTITY', quantity);
  if (command === 'RL.ALLOW' && group.some((i) => limits[i].isLease)) args.push('ID', leaseId);
  const reply = await send(redis, keyslot(keys[group[0]]), command, args, deadline);
  return { limited: Number(reply[0]) === 1, first: Number(reply[5]) - 1, fields: reply[6].map(named) };
}

// Takes `quantity` units of every rate limit and a lease named `leaseId`
// (required when there is a LEASE limit: a fresh one per request) of weight
// `quantity` on every concurrency limit, or nothing (see the top of this
// file for Redis Cluster). Resolves to { limited, binding, fields, taken }:
// `fields` one per limit, `binding` the index whose fields go into the
// headers, `taken` the limits that recorded the request.
async function allow(redis, limits, keys, { quantity = 1, groupBySlot = false, deadline, leaseId } = {}) {
  if (leaseId === undefined && limits.some((l) => l.isLease)) throw new Error('a LEASE limit needs a leaseId');
  const groups = groupBySlot ? slotGroups(keys) : [keys.map((_, i) => i)];
  const fields = new Array(keys.length);
  const taken = [];
  for (let n = 0; n < groups.length; n++) {
    const group = groups[n];
    const r = await several(redis, 'RL.ALLOW', limits, keys, group, quantity, deadline, leaseId);
    group.forEach((i, j) => (fields[i] = r.fields[j]));
    if (r.limited) {
      await Promise.all([
        giveBack(redis, limits, keys, taken, quantity, deadline),
        release(redis, limits, keys, taken, leaseId, deadline),
      ]);
      for (const later of groups.slice(n + 1)) {
        const p = await several(redis, 'RL.PEEK', limits, keys, later, quantity, deadline);
        later.forEach((i, j) => (fields[i] = p.fields[j]));
      }
      return { limited: true, binding: binding(fields), fields, taken: [] };
    }
    taken.push(...group);
    if (groups.length === 1) {
      return { limited: false, binding: group[r.first], fields, taken };
    }
  }
  return { limited: false, binding: binding(fields), fields, taken };
}

// RL.REFUND of `quantity` units on each rate limit in `indices`
// (concurrency limits are left alone: release() gives a lease back).
async function giveBack(redis, limits, keys, indices, quantity = 1, deadline = undefined) {
  await Promise.all(
    indices
      .filter((i) => !limits[i].isLease)
      .map((i) => send(redis, keyslot(keys[i]), 'RL.REFUND', [keys[i], ...limits[i].spec, quantity], deadline)),
  );
}

// RL.RELEASE of the lease `leaseId` on each concurrency limit in `indices`
// (rate limits are left alone). Releasing a lease that is gone already
// (released, expired) does nothing.
async function release(redis, limits, keys, indices, leaseId, deadline = undefined) {
  await Promise.all(
    indices
      .filter((i) => limits[i].isLease)
      .map((i) => send(redis, keyslot(keys[i]), 'RL.RELEASE', [keys[i], leaseId], deadline)),
  );
}

module.exports = { ALGORITHMS, Limit, parseLimits, keyslot, slotGroups, binding, allow, giveBack, release };
