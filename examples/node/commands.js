// One call of each redis-ratelimit command with ioredis, printing the reply.
//
//   node commands.js                          # against redis://127.0.0.1:6379
//   REDIS_URL=redis://host:6380/0 node commands.js
//
// Every limiter replies with the same five integers; FIELDS names them.
// RL.ALLOW and RL.PEEK reply with the binding limit's five, its index, and
// the five of every limit; RL.INSPECT with field-value pairs. The keys are
// $KEY_PREFIX (default "rl:example:") followed by the algorithm, so a
// second run shows the limiters being used up (except the RL.SLICE one,
// whose unit RL.REFUND gives back at the end).
'use strict';

const Redis = require('ioredis');

const FIELDS = ['limited', 'limit', 'remaining', 'retry_after', 'reset_after'];

// [limited, limit, remaining, retry_after, reset_after] -> "limited=0 limit=10 ..."
function show(reply) {
  return FIELDS.map((name, i) => `${name}=${Number(reply[i])}`).join(' ');
}

async function main() {
  const redis = new Redis(process.env.REDIS_URL || 'redis://127.0.0.1:6379');
  const prefix = process.env.KEY_PREFIX || 'rl:example:';
  const calls = [
    // GCRA: 30 per 60 s, bursts of 15 more (capacity 16).
    ['RL.THROTTLE', prefix + 'throttle', 15, 30, 60],
    // Exact sliding log: 10 per 60 s.
    ['RL.SLIDE', prefix + 'slide', 10, 60],
    // 10 per 60 s counted in 6 slices of 10 s.
    ['RL.SLICE', prefix + 'slice', 10, 60, 6],
  ];
  try {
    for (const [command, ...args] of calls) {
      console.log([command, ...args].join(' '));
      console.log('  ' + show(await redis.call(command, ...args)));
    }

    // Three limits of one subject, decided at once: 10 per second (exact),
    // 100 per minute (5 s slices), 1,000 per hour (1 min slices). The hash
    // tag {user:42} keeps the three keys in one slot on Redis Cluster too.
    const subject = prefix + '{user:42}:';
    const several = [3, subject + 's', subject + 'm', subject + 'h',
      'SLIDE', 10, 1, 'SLICE', 100, 60, 12, 'SLICE', 1000, 3600, 60];
    // RL.ALLOW takes one unit of each, or of none; RL.PEEK answers what
    // RL.ALLOW would answer now, changing nothing.
    for (const command of ['RL.ALLOW', 'RL.PEEK']) {
      const reply = await redis.call(command, ...several);
      console.log([command, ...several].join(' '));
      console.log(`  ${show(reply)} binding=${reply[5]}`);
      reply[6].forEach((fields, i) => console.log(`  limit ${i + 1}: ${show(fields)}`));
    }

    // What a key holds, without knowing its parameters: field-value pairs
    // (ioredis speaks RESP2, where a map is a flat array).
    const key = prefix + 'slide';
    const pairs = await redis.call('RL.INSPECT', key);
    console.log(`RL.INSPECT ${key}`);
    const text = [];
    for (let i = 0; i < pairs.length; i += 2) text.push(`${pairs[i]}=${pairs[i + 1]}`);
    console.log('  ' + text.join(' '));

    // Gives back the unit RL.SLICE took above (the request failed, say).
    const refund = ['RL.REFUND', prefix + 'slice', 'SLICE', 10, 60, 6, 1];
    console.log(refund.join(' '));
    console.log('  ' + show(await redis.call(...refund)));
  } finally {
    redis.disconnect();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
