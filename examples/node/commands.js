// One call of each redis-ratelimit command with ioredis, printing the reply.
//
//   node commands.js                          # against redis://127.0.0.1:6379
//   REDIS_URL=redis://host:6380/0 node commands.js
//
// Every command replies with the same five integers; FIELDS names them.
// The keys are $KEY_PREFIX (default "rl:example:") followed by the algorithm,
// so a second run shows the limiter being used up.
'use strict';

const Redis = require('ioredis');

const FIELDS = ['limited', 'limit', 'remaining', 'retry_after', 'reset_after'];

// [limited, limit, remaining, retry_after, reset_after] -> { limited, limit, ... }
function named(reply) {
  return Object.fromEntries(FIELDS.map((name, i) => [name, Number(reply[i])]));
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
      const reply = named(await redis.call(command, ...args));
      console.log([command, ...args].join(' '));
      console.log('  ' + FIELDS.map((name) => `${name}=${reply[name]}`).join(' '));
    }
  } finally {
    redis.disconnect();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
