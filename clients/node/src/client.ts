// One interface over the Redis clients: ioredis (Redis, Cluster) and
// node-redis (`redis` v4 and later: createClient, createCluster). Everything
// above it sends a command as an array of strings (or bytes), optionally
// routed to the node of a hash slot and bounded by a deadline; the reply's
// strings come back as text, or as Buffers when asked.

import { NotConnectedError } from './errors';

/** Where and by when to send a command. */
export interface Route {
  /** The slot of the command's keys (on a cluster, the node that serves it). */
  readonly slot?: number;
  /** A key of the command (node-redis's cluster routes by key). */
  readonly key?: string | Buffer;
  /** A Date.now() instant: the command is not sent after it and fails at it. */
  readonly deadline?: number;
}

/** How to read a reply. */
export interface ReplyOptions {
  /** The reply's strings as Buffers (their bytes), not as UTF-8 text. */
  readonly buffers?: boolean;
}

/** A Redis client behind one interface. */
export interface Connection {
  /** The client it wraps. */
  readonly client: object;
  readonly kind: 'ioredis' | 'node-redis';
  readonly isCluster: boolean;
  /** Sends `args` (the command's name first); resolves to the reply. */
  send(args: readonly (string | Buffer)[], route?: Route, read?: ReplyOptions): Promise<unknown>;
}

/** An ioredis client or cluster, or a node-redis client or cluster. */
export type RedisClient = object;

/** A deadline error: the command was not answered, or not sent, in time. */
export class DeadlineError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DeadlineError';
  }
}

function withDeadline<T>(promise: Promise<T>, deadline: number | undefined, what: string): Promise<T> {
  if (deadline === undefined) return promise;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineError(what)), Math.max(0, deadline - Date.now()));
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

function left(deadline: number | undefined): number | undefined {
  if (deadline === undefined) return undefined;
  const ms = deadline - Date.now();
  if (ms <= 0) throw new DeadlineError('deadline passed before the command was sent');
  return ms;
}

interface Emitter {
  once(event: string, listener: (...args: unknown[]) => void): unknown;
  removeListener(event: string, listener: (...args: unknown[]) => void): unknown;
}

// Resolves on `readyEvent`; rejects with NotConnectedError on any of
// `failEvents`, or with a DeadlineError at the deadline.
function waitFor(client: Emitter, readyEvent: string, failEvents: string[], deadline: number | undefined): Promise<void> {
  let cleanup = (): void => {};
  const p = new Promise<void>((resolve, reject) => {
    const ok = (): void => {
      cleanup();
      resolve();
    };
    const fail = (err?: unknown): void => {
      cleanup();
      const why = err instanceof Error ? `: ${err.message}` : '';
      reject(new NotConnectedError(`not connected (the connection attempt failed${why})`));
    };
    client.once(readyEvent, ok);
    for (const e of failEvents) client.once(e, fail);
    cleanup = () => {
      client.removeListener(readyEvent, ok);
      for (const e of failEvents) client.removeListener(e, fail);
    };
  });
  return withDeadline(p, deadline, 'not connected by the deadline').finally(() => cleanup());
}

interface IoredisLike extends Emitter {
  status: string;
  /** ioredis's timer of its next reconnection attempt. */
  reconnectTimeout?: NodeJS.Timeout | null;
  isCluster?: boolean;
  call(...args: unknown[]): Promise<unknown>;
  sendCommand(command: unknown): unknown;
  connect(): Promise<void>;
}

interface IoredisCommand {
  promise: Promise<unknown>;
  slot?: number | null;
  setTimeout(ms: number): void;
}
type CommandClass = new (
  name: string,
  args: (string | Buffer)[],
  options: { replyEncoding: string | null },
) => IoredisCommand;

let ioredisCommand: CommandClass | undefined;
function commandClass(): CommandClass {
  // ioredis is a peer dependency: it is there whenever an ioredis client is.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  if (!ioredisCommand) ioredisCommand = (require('ioredis') as { Command: CommandClass }).Command;
  return ioredisCommand;
}

function isIoredis(client: object): client is IoredisLike {
  const c = client as Partial<IoredisLike>;
  return typeof c.call === 'function' && typeof c.sendCommand === 'function' && typeof c.status === 'string';
}

function ioredisConnection(client: IoredisLike): Connection {
  const isCluster = client.isCluster === true;
  // A call that comes before the client is ready waits for it, within its
  // deadline (without one, until it is ready or gives up): a cold start, or
  // a reconnection. One that finds the client waiting to reconnect (after
  // the server closed its connection: a restart) makes it try at once, so
  // that no call fails once the server answers again; one that finds it
  // idle (lazyConnect) connects it. The client's own "Stream isn't
  // writeable" never comes out: a client that will not connect gives a
  // NotConnectedError.
  const connected = (deadline: number | undefined): Promise<void> => {
    const status = client.status;
    if (status === 'ready') return Promise.resolve();
    if (status === 'end') return Promise.reject(new NotConnectedError('not connected (the client was closed)'));
    const waiting = waitFor(client, 'ready', ['close', 'end'], deadline);
    if (status === 'wait' || status === 'reconnecting') {
      // The pending retry would only find the client connecting.
      if (client.reconnectTimeout) clearTimeout(client.reconnectTimeout);
      client.reconnectTimeout = null;
      client.connect().catch(() => undefined);
    }
    return waiting;
  };
  return {
    client,
    kind: 'ioredis',
    isCluster,
    async send(args, route = {}, read = {}) {
      await connected(route.deadline);
      const Command = commandClass();
      const command = new Command(String(args[0]!), args.slice(1), { replyEncoding: read.buffers ? null : 'utf8' });
      const ms = left(route.deadline);
      if (ms !== undefined) command.setTimeout(ms);
      if (isCluster && route.slot !== undefined) command.slot = route.slot;
      client.sendCommand(command);
      return withDeadline(command.promise, route.deadline, 'no answer by the deadline');
    },
  };
}

interface NodeRedisLike extends Emitter {
  isOpen?: boolean;
  isReady?: boolean;
  sendCommand(...args: unknown[]): Promise<unknown>;
}

function isNodeRedisCluster(client: object): boolean {
  const c = client as { getSlotMaster?: unknown; masters?: unknown };
  return typeof c.getSlotMaster === 'function';
}

// node-redis's RESP_TYPES.BLOB_STRING ('$') and SIMPLE_STRING ('+').
const BUFFERS = { 36: Buffer, 43: Buffer };

function nodeRedisConnection(client: NodeRedisLike): Connection {
  const isCluster = isNodeRedisCluster(client);
  // As for ioredis: a call before the client is ready waits for it, within
  // its deadline.
  const connected = (deadline: number | undefined): Promise<void> => {
    if (isCluster || client.isReady !== false) return Promise.resolve();
    if (client.isOpen) return waitFor(client, 'ready', ['end'], deadline);
    return Promise.reject(new NotConnectedError('not connected (the client is closed)'));
  };
  return {
    client,
    kind: 'node-redis',
    isCluster,
    async send(args, route = {}, read = {}) {
      await connected(route.deadline);
      const ms = left(route.deadline);
      // Buffers: `typeMapping` of node-redis 5 (blob and simple strings),
      // `returnBuffers` of node-redis 4.
      const buffers = read.buffers ? { typeMapping: BUFFERS, returnBuffers: true } : undefined;
      const options = ms === undefined ? buffers : { ...buffers, timeout: ms };
      const reply = isCluster
        ? client.sendCommand(route.key, false, args, options)
        : client.sendCommand(args, options);
      return withDeadline(reply, route.deadline, 'no answer by the deadline');
    },
  };
}

const connections = new WeakMap<object, Connection>();

/** The Connection of an ioredis or node-redis client (one per client). */
export function connectionOf(client: RedisClient | Connection): Connection {
  if (isConnection(client)) return client;
  let connection = connections.get(client);
  if (connection) return connection;
  if (isIoredis(client)) connection = ioredisConnection(client);
  else if (typeof (client as NodeRedisLike).sendCommand === 'function') {
    connection = nodeRedisConnection(client as NodeRedisLike);
  } else {
    throw new TypeError('expected an ioredis client (Redis, Cluster) or a node-redis client (createClient, createCluster)');
  }
  connections.set(client, connection);
  return connection;
}

function isConnection(value: object): value is Connection {
  const c = value as Partial<Connection>;
  return typeof c.send === 'function' && (c.kind === 'ioredis' || c.kind === 'node-redis') && 'client' in c;
}

export { withDeadline };
