// Pacing workers to a provider's limit: N workers (in one process or many)
// share 500 calls a minute. Each call waits for its turn (acquire:
// RL.THROTTLE ... MAXWAIT) instead of being refused, so the calls go out
// one every 120 ms, whatever the number of workers. Run by
// clients/node/test/example.test.js; alone:
//
//   REDIS_URL=redis://127.0.0.1:6379 WORKERS=4 CALLS=20 node pacing.js
'use strict';

const { RateLimiter, RateLimitedError, throttle } = require('redis-ratelimit');

// 500 a minute, no burst: one turn every 120 ms.
const PROVIDER = throttle(0, 500, 60);
const KEY = 'rl:provider:calls';

/**
 * Runs `calls` jobs on `workers` workers, each call of `call(job)` after
 * its turn; a worker waits at most `maxWaitMs` for a turn (then the job
 * counts as refused). Resolves to `{ done, refused }`.
 */
async function pace(limiter, { workers, calls, call, maxWaitMs = 60_000, limit = PROVIDER }) {
  let next = 0;
  const done = [];
  const refused = [];
  async function worker(name) {
    while (next < calls) {
      const job = next++;
      try {
        await limiter.acquire(KEY, limit, maxWaitMs);
      } catch (err) {
        if (!(err instanceof RateLimitedError)) throw err;
        refused.push(job);
        continue;
      }
      done.push(await call(job, name));
    }
  }
  await Promise.all(Array.from({ length: workers }, (_, i) => worker(`worker-${i + 1}`)));
  return { done, refused };
}

module.exports = { PROVIDER, KEY, pace };

if (require.main === module) {
  const Redis = require('ioredis');
  const redis = new Redis(process.env.REDIS_URL || 'redis://127.0.0.1:6379');
  const started = Date.now();
  const call = async (job, name) => {
    console.log(`${String(Date.now() - started).padStart(5)} ms  ${name} calls the provider (job ${job})`);
    return job;
  };
  pace(new RateLimiter(redis), { workers: Number(process.env.WORKERS || 4), calls: Number(process.env.CALLS || 20), call })
    .then(({ done, refused }) => console.log(`${done.length} calls, ${refused.length} refused`))
    .finally(() => redis.disconnect());
}
