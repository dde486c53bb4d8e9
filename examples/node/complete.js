// The complete Express snippet of clients/node/README.md (between the
// markers), run as it is by clients/node/test/example.test.js.
'use strict';

// [complete]
const express = require('express');
const Redis = require('ioredis');
const { expressRateLimit, ioredisOptions, slide, lease } = require('redis-ratelimit');

const redis = new Redis(process.env.REDIS_URL || 'redis://127.0.0.1:6379', ioredisOptions(250));
const app = express();
// $client and $ip are the peer address: no header a caller sends picks its
// bucket. Behind a proxy, name it: trustedProxies: ['10.0.0.0/8'] (below).
app.use(
  expressRateLimit({
    client: redis,
    limits: [
      { name: 'minute', key: 'rl:{user:$client}:m', limit: slide(100, 60) },
      { name: 'inflight', key: 'rl:{user:$client}:c', limit: lease(2, 60) },
    ],
  }),
);
app.get('/', (_req, res) => res.send('ok\n'));
app.listen(Number(process.env.PORT || 8080), '127.0.0.1');
// [/complete]
