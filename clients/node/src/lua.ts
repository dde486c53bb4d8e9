// The Lua backend: the module's commands answered by Lua scripts, for
// servers that cannot load modules. A port of the Python package's
// (redis_ratelimit_client.lua_backend).
//
// `executeLua(client, ['RL.THROTTLE', 'user:42', 9, 10, 60])` answers
// exactly what the module would answer to the same command line, run by
// the script of that command (EVALSHA, then EVAL once on NOSCRIPT), with
// every key declared: RL.ALLOW and RL.PEEK's numkeys keys, the first
// argument of the others. Error replies reject with the client's own
// error (ioredis's ReplyError, node-redis's ErrorReply) carrying the
// module's text. On a cluster the command goes to the node of its first
// key, as the module backend's does.
//
// The script of a command is the command's file (`lua/throttle.lua`, ...),
// a newline, then `lua/prelude.lua` (clients/lua/README.md). The files are the package's own `lib/lua/`
// (copied from clients/lua at build), or those of the directory given as
// `luaDir` or in REDIS_RATELIMIT_LUA_DIR.
//
// RL.QUOTA's calendar: the client's clock and Intl give the period
// boundaries (calendar.ts), the first argument of the scripts that may
// meet a QUOTA limit (RL.QUOTA, RL.ALLOW, RL.PEEK, RL.REFUND).

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { type Backend, type CommandName, registerLuaBackend } from './backend';
import { type CommandArg, argBytes, calendarArgument, commandName, numkeys } from './calendar';
import { type Connection, type RedisClient, type Route, connectionOf } from './client';
import { keyslot } from './slots';

export { MARGIN_SECONDS, calendarArgument } from './calendar';
export type { CommandArg } from './calendar';

const COMMANDS: Readonly<Record<string, string>> = {
  'RL.THROTTLE': 'throttle',
  'RL.SLIDE': 'slide',
  'RL.SLICE': 'slice',
  'RL.LEASE': 'lease',
  'RL.RELEASE': 'release',
  'RL.QUOTA': 'quota',
  'RL.ALLOW': 'allow',
  'RL.PEEK': 'peek',
  'RL.REFUND': 'refund',
  'RL.INSPECT': 'inspect',
};

/** Options of executeLua. */
export interface ExecuteOptions {
  /** The client's clock for RL.QUOTA's calendar: a Date.now() instant or a Date (default: now). */
  readonly now?: number | Date;
  /** The directory of the scripts (default: REDIS_RATELIMIT_LUA_DIR, else the package's own). */
  readonly luaDir?: string;
  /** The reply's strings as Buffers (lease ids of any bytes), not as UTF-8 text. */
  readonly buffers?: boolean;
  /** A Date.now() instant: the call sends nothing after it and fails at it. */
  readonly deadline?: number;
}

function luaDirOf(luaDir: string | undefined): string {
  return luaDir ?? (process.env.REDIS_RATELIMIT_LUA_DIR || path.join(__dirname, 'lua'));
}

interface Script {
  readonly source: Buffer;
  readonly sha: string;
}

const scripts = new Map<string, Script>();

function script(file: string, dir: string): Script {
  const id = `${dir}\0${file}`;
  let found = scripts.get(id);
  if (found) return found;
  const read = (name: string): Buffer => {
    try {
      return readFileSync(path.join(dir, name));
    } catch (err) {
      throw new Error(
        `the Lua backend's script ${name} is not in ${dir} (${(err as Error).message}): ` +
          'the package is built with `make dist-node`, which copies clients/lua/*.lua into lib/lua/',
      );
    }
  };
  const source = Buffer.concat([read(`${file}.lua`), Buffer.from('\n'), read('prelude.lua')]);
  found = { source, sha: createHash('sha1').update(source).digest('hex') };
  scripts.set(id, found);
  return found;
}

function fileOf(name: string): string {
  const file = Object.prototype.hasOwnProperty.call(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (file === undefined) throw new RangeError(`${name} is not a command of the module`);
  return file;
}

/** The whole script that answers `command` (`RL.THROTTLE`, ...), as sent with EVAL. */
export function scriptSource(command: string, luaDir?: string): Buffer {
  return script(fileOf(command.toUpperCase()), luaDirOf(luaDir)).source;
}

// The commands whose scripts take the calendar as their first argument.
const WITH_CALENDAR = new Set(['RL.QUOTA', 'RL.ALLOW', 'RL.PEEK', 'RL.REFUND']);

// The keys the script declares: RL.ALLOW and RL.PEEK's numkeys keys (none
// when numkeys is not 1 to 16: the script answers the module's error), the
// first argument of the others.
function keysOf(name: string, args: readonly CommandArg[]): CommandArg[] {
  if (name === 'RL.ALLOW' || name === 'RL.PEEK') {
    const n = args.length > 0 ? numkeys(argBytes(args[0]!)) : undefined;
    return n ? args.slice(1, 1 + n) : [];
  }
  return args.slice(0, 1);
}

/** The key that routes a command line on a cluster: its first key. */
function firstKey(name: string, args: readonly CommandArg[]): CommandArg | undefined {
  if (name === 'RL.ALLOW' || name === 'RL.PEEK') return args[1];
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
  const { source, sha } = script(fileOf(name), luaDirOf(options.luaDir));
  const args = command.slice(1);
  const keys = keysOf(name, args);
  // The keys go in KEYS only: the script puts them back in their places.
  const at = name === 'RL.ALLOW' || name === 'RL.PEEK' ? 1 : 0;
  const rest = [...args.slice(0, at), ...args.slice(at + keys.length)].map(wire);
  const calendar = WITH_CALENDAR.has(name) ? [calendarArgument(command, options.now)] : [];
  const tail = [String(keys.length), ...keys.map(wire), ...calendar, ...rest];
  const reply = { buffers: options.buffers === true };
  let answer: unknown;
  try {
    answer = await connection.send(['EVALSHA', sha, ...tail], route, reply);
  } catch (err) {
    if (!isNoscript(err)) throw err;
    answer = await connection.send(['EVAL', source, ...tail], route, reply);
  }
  return name === 'RL.INSPECT' ? asMap(connection, answer) : answer;
}

/**
 * Answers a module command line through the Lua scripts, exactly as the
 * module would: `await executeLua(redis, ['RL.SLIDE', 'k', 10, 60])`
 * resolves to `[0, 10, 9, -1, 60]`. `client` is an ioredis or node-redis
 * client or cluster; the command's name comes first, in any case. An error
 * reply rejects with the client's error carrying the module's text.
 * `now` replaces the client's clock for RL.QUOTA's calendar.
 */
export async function executeLua(
  client: RedisClient | Connection,
  command: readonly CommandArg[],
  options: ExecuteOptions = {},
): Promise<unknown> {
  const connection = connectionOf(client);
  const name = command.length > 0 ? commandName(command) : '';
  const key = firstKey(name, command.slice(1));
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
