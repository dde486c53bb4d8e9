// Limiting calls to an LLM per user: at most 4 at once, 60 requests a
// minute and 100,000 tokens a minute, decided by one RL.ALLOW before the
// call (the tokens by an estimate, UNITS), then settled with the usage the
// model reports (RL.CHARGE of what went over, RL.REFUND of what was not
// used). Run by clients/node/test/example.test.js; alone:
//
//   REDIS_URL=redis://127.0.0.1:6379 node llm.js
'use strict';

const { RateLimiter, lease, throttle, newLeaseId } = require('redis-ratelimit');

const LIMITS = {
  inflight: lease(4, 120), // 4 calls at once, each lease lasting at most 120 s
  requests: throttle(60, 60, 60), // 60 requests a minute
  tokens: throttle(100000, 100000, 60), // 100,000 tokens a minute
};
const NAMES = ['inflight', 'requests', 'tokens'];

// A rough estimate before the call: the prompt's tokens (about 4
// characters each) and the most the answer may have.
function estimateTokens(prompt, maxOutput) {
  return Math.ceil(prompt.length / 4) + maxOutput;
}

/**
 * Calls `model(prompt, maxOutput)` (resolving to `{ text, usage: {
 * totalTokens } }`) for `user` within the limits. Resolves to `{ text,
 * usage }`, or to `{ refused, retryAfter, binding }` when a limit refuses
 * (retryAfter in seconds; -1: this request can never fit).
 */
async function complete(limiter, user, prompt, model, maxOutput = 1000) {
  const keys = { inflight: `llm:{${user}}:inflight`, requests: `llm:{${user}}:rpm`, tokens: `llm:{${user}}:tpm` };
  const estimate = estimateTokens(prompt, maxOutput);
  const id = newLeaseId();
  // RL.ALLOW 3 <keys> LEASE 4 120 THROTTLE 60 60 60 THROTTLE 100000 100000 60 UNITS <estimate> ID <id>
  const r = await limiter.allow([
    [keys.inflight, LIMITS.inflight],
    [keys.requests, LIMITS.requests],
    [keys.tokens, LIMITS.tokens.with({ units: estimate })],
  ], { id });
  if (r.limited) return { refused: true, retryAfter: r.retryAfter, binding: NAMES[r.index - 1] };
  let used = 0;
  try {
    const answer = await model(prompt, maxOutput);
    used = answer.usage.totalTokens;
    return { text: answer.text, usage: answer.usage };
  } finally {
    // The estimate taken, what was used given back or charged (a failed
    // call used nothing), and the lease released.
    await Promise.all([
      limiter.settle([[keys.tokens, LIMITS.tokens]], estimate, used),
      limiter.release(keys.inflight, id),
    ]);
  }
}

module.exports = { LIMITS, estimateTokens, complete };

if (require.main === module) {
  const Redis = require('ioredis');
  const redis = new Redis(process.env.REDIS_URL || 'redis://127.0.0.1:6379');
  const limiter = new RateLimiter(redis);
  // A stand-in for the provider's client: answers with its usage.
  const model = async (prompt) => ({ text: `echo: ${prompt}`, usage: { totalTokens: Math.ceil(prompt.length / 4) + 20 } });
  complete(limiter, 'alice', 'Say hello in three languages.', model)
    .then((out) => console.log(JSON.stringify(out)))
    .finally(() => redis.disconnect());
}
