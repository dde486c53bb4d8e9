// The seam between the typed API and what answers the commands. A backend
// takes a module command line (the command's name without its prefix, and
// exactly the arguments the module would get) and resolves to the module's
// reply. The module backend sends it as `<PREFIX>.<NAME> args...`; the Lua
// backend (lua.ts, which registers itself here) runs the command's script
// with the same arguments and answers the same replies and errors
// (clients/lua/README.md: the calling convention).

import { BackendUnavailableError } from './errors';
import type { Connection, Route } from './client';

/** The module's commands, by name without prefix. */
export type CommandName =
  | 'THROTTLE'
  | 'SLIDE'
  | 'SLICE'
  | 'LEASE'
  | 'RELEASE'
  | 'QUOTA'
  | 'ALLOW'
  | 'PEEK'
  | 'INSPECT'
  | 'REFUND'
  | 'CHARGE'
  | 'TOP';

/** What answers the commands. */
export interface Backend {
  readonly kind: 'module' | 'lua';
  /** Answers `name args...` as the module would (errors as the server's error replies). */
  call(name: CommandName, args: readonly string[], route?: Route): Promise<unknown>;
}

/** Which backend to use: the module if loaded, else Lua (`auto`); or forced. */
export type BackendChoice = 'auto' | 'module' | 'lua';

/** Sends the commands to the loaded module, under its command prefix (`RL` unless renamed). */
export class ModuleBackend implements Backend {
  readonly kind = 'module' as const;
  readonly prefix: string;
  private readonly connection: Connection;

  constructor(connection: Connection, prefix = 'RL') {
    this.connection = connection;
    this.prefix = prefix;
  }

  call(name: CommandName, args: readonly string[], route?: Route): Promise<unknown> {
    return this.connection.send([`${this.prefix}.${name}`, ...args], route);
  }
}

/** Builds a Lua backend over a connection. */
export type LuaBackendFactory = (connection: Connection) => Backend;

let luaFactory: LuaBackendFactory | undefined;

/**
 * Plugs a Lua backend in: `backend: 'lua'`, and `'auto'` on a server
 * without the module, build theirs with `factory`. The package's own
 * (LuaBackend) is plugged in when the package is loaded.
 */
export function registerLuaBackend(factory: LuaBackendFactory): void {
  luaFactory = factory;
}

function luaBackend(connection: Connection, why: string): Backend {
  if (!luaFactory) throw new BackendUnavailableError(`${why}, and no Lua backend is registered`);
  return luaFactory(connection);
}

function names(reply: unknown): string[] {
  return Array.isArray(reply) ? reply.map((n) => String(n)) : [];
}

/**
 * The module's command prefix on this server (`RL`, or the word given to
 * the module's load-time PREFIX option), or null when the module is not
 * loaded. Asks COMMAND LIST FILTERBY MODULE ratelimit; where COMMAND LIST is
 * refused (ACL), COMMAND INFO RL.THROTTLE, which finds the default prefix only.
 */
export async function detectPrefix(connection: Connection): Promise<string | null> {
  let listed: string[];
  try {
    listed = names(await connection.send(['COMMAND', 'LIST', 'FILTERBY', 'MODULE', 'ratelimit']));
  } catch (err) {
    if (!/^(ERR|NOPERM)/.test((err as Error).message ?? '')) throw err;
    const info = await connection.send(['COMMAND', 'INFO', 'RL.THROTTLE']);
    return Array.isArray(info) && info[0] ? 'RL' : null;
  }
  const throttle = listed.find((n) => /\.throttle$/i.test(n));
  return throttle ? throttle.slice(0, -'.throttle'.length) : null;
}

/** The backend for `choice` on this connection (detecting the module once; see RateLimiter). */
export async function chooseBackend(connection: Connection, choice: BackendChoice, prefix?: string): Promise<Backend> {
  if (choice === 'lua') return luaBackend(connection, 'the Lua backend was asked for');
  if (choice === 'module' && prefix !== undefined) return new ModuleBackend(connection, prefix);
  const detected = await detectPrefix(connection);
  if (detected !== null) return new ModuleBackend(connection, prefix ?? detected);
  if (choice === 'module') {
    throw new BackendUnavailableError(
      'the redis-ratelimit module is not loaded on this server (COMMAND LIST FILTERBY MODULE ratelimit is empty): ' +
        "load it (loadmodule /path/to/libredis_ratelimit.so), or use backend: 'lua' (or 'auto')",
    );
  }
  return luaBackend(connection, 'the redis-ratelimit module is not loaded on this server');
}
