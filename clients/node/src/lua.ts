// The Lua backend: the module's commands answered by Lua scripts, for
// servers that cannot load modules. A port of the Python package's
// (redis_ratelimit_client.lua_backend).
//
// `executeLua(client, ['RL.THROTTLE', 'user:42', 9, 10, 60])` answers
// exactly what the module would answer to the same command line, run by
// the script of that command (EVALSHA, then EVAL once on NOSCRIPT), with
// every key declared. Error replies reject with the client's own error
// (ioredis's ReplyError, node-redis's ErrorReply) carrying the module's
// text. On a cluster the command goes to the node of its first key, as the
// module backend's does.
//
// The scripts are `lua/ratelimit.lua` and `lua/manifest.json` (built from
// clients/lua/src; the package's own `lib/lua/`, or the directory given as
// `luaDir` or in REDIS_RATELIMIT_LUA_DIR): a command's script is its
// manifest prefix, then ratelimit.lua. They hold every rule; this module
// passes the command line through and computes only a time zone's
// offsets (zones.ts) and, for servers that refuse TIME in scripts, the
// server's clock (clients/lua/README.md).

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { type Backend, type CommandName, registerLuaBackend } from './backend';
import { type Connection, type RedisClient, type Route, connectionOf } from './client';
import { keyslot } from './slots';
import { type CommandArg, argBytes, commandName, zoneOffsets } from './zones';

export { zoneOffsets } from './zones';
export type { CommandArg } from './zones';

/** The start of the scripts' answer when the server refuses TIME in scripts. */
export const TIME_REFUSED = 'ERR ratelimit: TIME refused in scripts:';
/** How often a passed clock reads the server's again, in ms. */
export const CLOCK_REREAD_MS = 60_000;

/** Which clock the scripts use: the server's TIME, the server's clock read outside them, or auto. */
export type ClockChoice = 'auto' | 'server' | 'client';

/** Options of executeLua. */
export interface ExecuteOptions {
  /** The client's clock for the zone offsets: a Date.now() instant or a Date (default: now). */
  readonly now?: number | Date;
  /** The directory of the scripts (default: REDIS_RATELIMIT_LUA_DIR, else the package's own). */
  readonly luaDir?: string;
  /** The reply's strings as Buffers (lease ids of any bytes), not as UTF-8 text. */
  readonly buffers?: boolean;
  /** A Date.now() instant: the call sends nothing after it and fails at it. */
  readonly deadline?: number;
  /** The clock (default 'auto': the server's TIME until the script says the server refuses it). */
  readonly clock?: ClockChoice;
  /** How often a passed clock reads the server's again, in ms (default CLOCK_REREAD_MS). */
  readonly clockRereadMs?: number;
}

function luaDirOf(luaDir: string | undefined): string {
  return luaDir ?? (process.env.REDIS_RATELIMIT_LUA_DIR || path.join(__dirname, 'lua'));
}

interface Script {
  readonly source: Buffer;
  readonly sha: string;
  /** How the command line gives its keys: the first argument, numkeys, or none (RL.TOP). */
  readonly keys: 'first' | 'numkeys' | 'none';
}

const manifests = new Map<string, Map<string, Script>>();

function scriptsOf(dir: string): Map<string, Script> {
  let found = manifests.get(dir);
  if (found) return found;
  const read = (name: string): Buffer => {
    try {
      return readFileSync(path.join(dir, name));
    } catch (err) {
      throw new Error(
        `the Lua backend's ${name} is not in ${dir} (${(err as Error).message}): ` +
          'the package is built with `make dist-node`, which copies clients/lua/dist into lib/lua/',
      );
    }
  };
  const body = read('ratelimit.lua');
  const manifest = JSON.parse(read('manifest.json').toString('utf8')) as {
    commands: Record<string, { prefix: string; keys: 'first' | 'numkeys' | 'none' }>;
  };
  found = new Map();
  for (const [name, entry] of Object.entries(manifest.commands)) {
    const source = Buffer.concat([Buffer.from(entry.prefix, 'utf8'), body]);
    found.set(name, { source, sha: createHash('sha1').update(source).digest('hex'), keys: entry.keys });
  }
  manifests.set(dir, found);
  return found;
}

function scriptOf(name: string, luaDir: string | undefined): Script {
  const found = scriptsOf(luaDirOf(luaDir)).get(name);
  if (found === undefined) throw new RangeError(`${name} is not a command the Lua backend's scripts answer`);
  return found;
}

/** The whole script that answers `command` (`RL.THROTTLE`, ...), as sent with EVAL. */
export function scriptSource(command: string, luaDir?: string): Buffer {
  return scriptOf(command.toUpperCase(), luaDir).source;
}

// The keys (KEYS) and the other arguments (ARGV after the head).
function split(script: Script, args: readonly CommandArg[]): [CommandArg[], CommandArg[]] {
  if (script.keys === 'none') return [[], [...args]];
  if (script.keys === 'numkeys') {
    const word = args.length > 0 ? argBytes(args[0]!).toString('latin1') : '';
    const n = /^[0-9]{1,2}$/.test(word) ? Number(word) : 0;
    const keys = n >= 1 && n <= 16 && args.length > n ? args.slice(1, 1 + n) : [];
    return [keys, [...args.slice(0, 1), ...args.slice(1 + keys.length)]];
  }
  return [args.slice(0, 1), args.slice(1)];
}

/**
 * ARGV[1]: the clock (`''`: the script reads TIME; else Unix µs), then a
 * zone segment per distinct argument after a `TZ` among `argv` (the
 * arguments that are not keys) that the zone database knows.
 */
export function head(argv: readonly CommandArg[], clock: bigint | undefined, now: number): string {
  let text = clock === undefined ? '' : String(clock);
  const seen = new Set<string>();
  const bytes = argv.map(argBytes);
  for (let i = 0; i + 1 < bytes.length; i++) {
    if (bytes[i]!.toString('latin1').toUpperCase() !== 'TZ') continue;
    const value = bytes[i + 1]!;
    const id = value.toString('latin1');
    if (seen.has(id)) continue;
    seen.add(id);
    const segment = zoneOffsets(value, now);
    if (segment !== undefined) text += `;${segment}`;
  }
  return text;
}

// A client's clock choice, and the server's clock carried on the monotonic
// clock (performance.now()).
interface ClockState {
  passed: boolean;
  serverUs: bigint;
  readAt: number; // performance.now() ms; -1: never read
}

const clocks = new WeakMap<object, ClockState>();

function clockOf(connection: Connection, choice: ClockChoice): ClockState {
  if (choice !== 'auto' && choice !== 'server' && choice !== 'client') {
    throw new RangeError(`clock must be 'auto', 'server' or 'client', not ${String(choice)}`);
  }
  let state = clocks.get(connection.client);
  if (!state) {
    state = { passed: choice === 'client', serverUs: 0n, readAt: -1 };
    clocks.set(connection.client, state);
  }
  if (choice !== 'auto') state.passed = choice === 'client';
  return state;
}

// The server's clock in µs: TIME, or INFO server's server_time_usec where TIME is refused.
async function serverClock(connection: Connection, route: Route): Promise<bigint> {
  try {
    const t = (await connection.send(['TIME'], route)) as unknown[];
    return BigInt(String(t[0])) * 1_000_000n + BigInt(String(t[1]));
  } catch {
    const info = String(await connection.send(['INFO', 'server'], route));
    const m = /server_time_usec:(\d+)/.exec(info);
    if (!m) throw new Error('the server refuses TIME and its INFO server has no server_time_usec');
    return BigInt(m[1]!);
  }
}

async function passedClock(
  state: ClockState,
  connection: Connection,
  route: Route,
  reread: number,
): Promise<bigint> {
  // A clock read for this call goes as read; else carried forward.
  if (state.readAt < 0 || performance.now() - state.readAt >= reread) {
    const us = await serverClock(connection, route);
    state.serverUs = us;
    state.readAt = performance.now();
    return us;
  }
  return state.serverUs + BigInt(Math.floor((performance.now() - state.readAt) * 1000));
}

function isRefused(err: unknown): boolean {
  return err instanceof Error && err.message.startsWith(TIME_REFUSED);
}

/** The key that routes a command line on a cluster: its first key (none for a command without keys). */
function firstKey(name: string, args: readonly CommandArg[], luaDir: string | undefined): CommandArg | undefined {
  const keys = scriptsOf(luaDirOf(luaDir)).get(name)?.keys;
  if (keys === 'none') return undefined;
  if (keys === 'numkeys') return args[1];
  return args[0];
}

function wire(a: CommandArg): string | Buffer {
  if (typeof a === 'string') return a;
  if (a instanceof Uint8Array) return Buffer.from(a.buffer, a.byteOffset, a.byteLength);
  return String(a);
}

function isNoscript(err: unknown): boolean {
  return err instanceof Error && err.message.startsWith('NOSCRIPT');
}

// Under RESP3 the module answers RL.INSPECT with a map, which node-redis
// reads as its client's type mapping of maps says (by default an object);
// a script answers a flat array, turned here into the same.
function asMap(connection: Connection, reply: unknown): unknown {
  if (connection.kind !== 'node-redis' || !Array.isArray(reply)) return reply;
  const c = connection.client as {
    options?: { RESP?: number; commandOptions?: { typeMapping?: Record<number, unknown> } };
    _options?: { RESP?: number; commandOptions?: { typeMapping?: Record<number, unknown> } };
  };
  const options = c.options ?? c._options;
  if (options?.RESP !== 3) return reply;
  const mapping = options.commandOptions?.typeMapping?.[37]; // RESP_TYPES.MAP
  if (mapping === Array) return reply;
  if (mapping === Map) {
    const m = new Map<unknown, unknown>();
    for (let i = 0; i + 1 < reply.length; i += 2) m.set(reply[i], reply[i + 1]);
    return m;
  }
  const o: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  for (let i = 0; i + 1 < reply.length; i += 2) o[String(reply[i])] = reply[i + 1];
  return o;
}

async function run(
  connection: Connection,
  command: readonly CommandArg[],
  route: Route,
  options: ExecuteOptions,
): Promise<unknown> {
  if (command.length === 0) throw new TypeError('a command line needs at least the command name');
  const name = commandName(command);
  const script = scriptOf(name, options.luaDir);
  const [keys, argv] = split(script, command.slice(1));
  const ms = options.now === undefined ? Date.now() : typeof options.now === 'number' ? options.now : options.now.getTime();
  if (!Number.isFinite(ms)) throw new RangeError(`now must be a finite instant, not ${String(options.now)}`);
  const choice = options.clock ?? 'auto';
  const state = clockOf(connection, choice);
  const reply = { buffers: options.buffers === true };
  for (let attempt = 0; ; attempt++) {
    const reread = options.clockRereadMs ?? CLOCK_REREAD_MS;
    const clock = state.passed ? await passedClock(state, connection, route, reread) : undefined;
    const tail = [String(keys.length), ...keys.map(wire), head(argv, clock, ms / 1000), ...argv.map(wire)];
    let answer: unknown;
    try {
      try {
        answer = await connection.send(['EVALSHA', script.sha, ...tail], route, reply);
      } catch (err) {
        if (!isNoscript(err)) throw err;
        answer = await connection.send(['EVAL', script.source, ...tail], route, reply);
      }
    } catch (err) {
      if (attempt === 0 && !state.passed && choice === 'auto' && isRefused(err)) {
        state.passed = true;
        continue;
      }
      throw err;
    }
    return name === 'RL.INSPECT' ? asMap(connection, answer) : answer;
  }
}

/**
 * Answers a module command line through the Lua scripts, exactly as the
 * module would: `await executeLua(redis, ['RL.SLIDE', 'k', 10, 60])`
 * resolves to `[0, 10, 9, -1, 60]`. `client` is an ioredis or node-redis
 * client or cluster; the command's name comes first, in any case. An error
 * reply rejects with the client's error carrying the module's text.
 * `now` replaces the client's clock for the zone offsets; `clock` forces the clock.
 */
export async function executeLua(
  client: RedisClient | Connection,
  command: readonly CommandArg[],
  options: ExecuteOptions = {},
): Promise<unknown> {
  const connection = connectionOf(client);
  const name = command.length > 0 ? commandName(command) : '';
  const key = firstKey(name, command.slice(1), options.luaDir);
  const route: Route =
    key === undefined
      ? { deadline: options.deadline }
      : { slot: keyslot(argBytes(key)), key: wire(key), deadline: options.deadline };
  return run(connection, command, route, options);
}

/** Runs each command as its Lua script (executeLua), with the module's replies. */
export class LuaBackend implements Backend {
  readonly kind = 'lua' as const;
  private readonly connection: Connection;

  constructor(connection: Connection) {
    this.connection = connection;
  }

  call(name: CommandName, args: readonly string[], route: Route = {}): Promise<unknown> {
    return run(this.connection, [`RL.${name}`, ...args], route, {});
  }
}

registerLuaBackend((connection) => new LuaBackend(connection));
