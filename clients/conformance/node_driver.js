// The Node package's Lua backend as the conformance suite's third backend
// ("node-lua"): executeLua of the INSTALLED package (redis-ratelimit found
// through NODE_PATH), driven over JSON lines.
//
//   node node_driver.js <port> [ioredis | node-redis]
//   node node_driver.js --zones
//
// First line out: {"ready": true, "package": <the package's directory>,
// "version": ...}. Then, per line in, {"cmd": [arg, ...], "now": <Unix
// seconds, optional>}, where an argument is a JSON string (sent as UTF-8)
// or {"hex": "..."} (those bytes), one line out: {"reply": value}, with
// every string of the reply as {"hex": "..."} (its bytes) and integers,
// nulls and arrays as they are; or {"error": <the error reply's text>};
// or {"fatal": <message>} for anything that is not a server's reply.
// With --zones, no server: per line in, {"cmd": [zone], "now": <Unix
// seconds>}, one line out, {"zones": <zoneOffsets(zone, now) or null>}.
'use strict';

const path = require('node:path');
const readline = require('node:readline');

const [port, which = 'ioredis'] = process.argv.slice(2);
const pkg = require('redis-ratelimit');
const { executeLua, zoneOffsets } = pkg;

function encode(reply) {
  if (Buffer.isBuffer(reply)) return { hex: reply.toString('hex') };
  if (typeof reply === 'string') return { hex: Buffer.from(reply, 'utf8').toString('hex') };
  if (Array.isArray(reply)) return reply.map(encode);
  return reply; // integers and nulls
}

function decodeArg(a) {
  if (typeof a === 'string') return a;
  if (a && typeof a.hex === 'string') return Buffer.from(a.hex, 'hex');
  throw new TypeError(`an argument is a string or {"hex": ...}, not ${JSON.stringify(a)}`);
}

function isReplyError(err) {
  return /Reply|SimpleError/.test(err.name) || /Reply|SimpleError/.test(err.constructor.name);
}

async function connect() {
  if (which === 'ioredis') {
    const Redis = require('ioredis');
    const client = new Redis(Number(port), '127.0.0.1', { lazyConnect: true });
    await client.connect();
    return { client, close: () => client.disconnect() };
  }
  if (which === 'node-redis') {
    const { createClient } = require('redis');
    const client = createClient({ url: `redis://127.0.0.1:${port}` });
    client.on('error', () => {});
    await client.connect();
    return { client, close: () => (client.destroy ? client.destroy() : client.disconnect()) };
  }
  throw new Error(`unknown client ${which} (expected ioredis or node-redis)`);
}

async function main() {
  const calendar = port === '--zones';
  const { client, close } = calendar ? { close: () => {} } : await connect();
  const dir = path.dirname(require.resolve('redis-ratelimit/package.json'));
  const write = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');
  write({ ready: true, package: dir, version: require('redis-ratelimit/package.json').version, client: which });
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    if (!line.trim()) continue;
    let request;
    try {
      request = JSON.parse(line);
      const command = request.cmd.map(decodeArg);
      if (calendar) {
        write({ zones: zoneOffsets(Buffer.from(command[0]), request.now) ?? null });
        continue;
      }
      const options = { buffers: true };
      if (typeof request.now === 'number') options.now = request.now * 1000;
      if (typeof request.clock === 'string') options.clock = request.clock;
      write({ reply: encode(await executeLua(client, command, options)) });
    } catch (err) {
      if (err instanceof Error && isReplyError(err)) write({ error: err.message });
      else write({ fatal: err instanceof Error ? err.stack || err.message : String(err) });
    }
  }
  close();
}

main().catch((err) => {
  process.stdout.write(JSON.stringify({ fatal: err.stack || String(err) }) + '\n');
  process.exit(1);
});
