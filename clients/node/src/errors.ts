// The errors the package raises: the module's ERR replies (naming the
// argument), WRONGTYPE, a refused lease, and a backend that is missing.

import type { Result } from './results';

/** The base class of every error this package raises. */
export class RateLimitError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/**
 * An `ERR ...` reply of the module: a bad argument. `argument` names it as
 * the module does (`period`, `TZ`, `numkeys`, ...; for an unknown word, the
 * word), `spec` is the 1-based spec of RL.ALLOW, RL.PEEK or RL.REFUND it is
 * in, when the module says so.
 */
export class ArgumentError extends RateLimitError {
  readonly argument: string | undefined;
  readonly spec: number | undefined;
  /** The reply's text, without `ERR `. */
  readonly reply: string;

  constructor(reply: string) {
    super(reply);
    this.reply = reply;
    const parsed = parseArgument(reply);
    this.argument = parsed.argument;
    this.spec = parsed.spec;
  }
}

/** `WRONGTYPE`: the key holds another kind of value than the command's. */
export class WrongTypeError extends RateLimitError {}

/**
 * A lease that was refused: `result` is RL.LEASE's reply (its header fields:
 * `rateLimitHeaders(err.result, { name, limit })`); `retryAfter` its
 * retry_after (the limit's unit; -1: it can never fit).
 */
export class LeaseRefusedError extends RateLimitError {
  readonly retryAfter: number;
  readonly key: string;
  readonly result: Result;

  constructor(key: string, result: Result) {
    super(`lease on ${key} refused: ${result.remaining} of ${result.limit} free, retry after ${result.retryAfter}`);
    this.key = key;
    this.result = result;
    this.retryAfter = result.retryAfter;
  }
}

/**
 * A refused `acquire` or `acquireAll`: its wait would be longer than it may
 * wait (or it can never fit). `result` is the reply (times in ms: acquire
 * sends MS); `retryAfter` its retry_after in ms (-1: it can never fit).
 */
export class RateLimitedError extends RateLimitError {
  readonly retryAfter: number;
  readonly key: string;
  readonly result: Result;

  constructor(key: string, result: Result, why = '') {
    super(`${key} rate limited${why}: retry after ${result.retryAfter} ms`);
    this.key = key;
    this.result = result;
    this.retryAfter = result.retryAfter;
  }
}

/**
 * The client is not connected and will not be by the call's deadline (it is
 * closed, or still connecting when the deadline passed): an outage.
 */
export class NotConnectedError extends RateLimitError {}

/** No backend serves the commands (the module is not loaded, and no Lua backend). */
export class BackendUnavailableError extends RateLimitError {}

const PATTERNS: [RegExp, (m: RegExpExecArray) => string][] = [
  [/^unknown argument '(.*)'$/s, (m) => m[1]!],
  [/^unknown time zone /, () => 'TZ'],
  [/^time zone offset /, () => 'TZ'],
  [/^unknown algorithm /, () => 'spec'],
  [/^key '.*' is given more than once$/s, () => 'key'],
  [/^wrong number of arguments/, () => 'arguments'],
  [/^expects /, () => 'spec'],
  [/^\(max_burst \+ 1\) x period \/ count /, () => 'period'],
  [/^a LEASE spec needs the ID option/, () => 'ID'],
  [/^ID is given but/, () => 'ID'],
  [/^RL\.(REFUND|CHARGE) does not take a LEASE spec/i, () => 'spec'],
  [/^quantity /, () => 'quantity'],
  [/^(LEASE|SHADOW) takes no BLOCK/, () => 'BLOCK'],
  [/^MAXWAIT takes THROTTLE limits only/, () => 'MAXWAIT'],
  [/^at least one spec must be enforced/, () => 'SHADOW'],
  [/^spec \d+ is missing/, () => 'spec'],
  [/^([A-Za-z_][A-Za-z_0-9]*) (must|is given more than once)/, (m) => m[1]!],
];

/** The argument an ERR reply's text names, and its spec when the module says. */
export function parseArgument(reply: string): { argument: string | undefined; spec: number | undefined } {
  let rest = reply.replace(/^ERR /, '');
  let spec: number | undefined;
  const inSpec = /^spec (\d+)(?: \([A-Z]+\))?: /.exec(rest);
  if (inSpec) {
    spec = Number(inSpec[1]);
    rest = rest.slice(inSpec[0].length);
  } else {
    const missing = /^spec (\d+) is missing|^MAXWAIT takes THROTTLE limits only: spec (\d+) is /.exec(rest);
    if (missing) spec = Number(missing[1] ?? missing[2]);
  }
  for (const [pattern, name] of PATTERNS) {
    const m = pattern.exec(rest);
    if (m) return { argument: name(m), spec };
  }
  return { argument: undefined, spec };
}

/** The package's error for an error reply of the server, or the error itself. */
export function translate(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  const message = err.message;
  if (message.startsWith('WRONGTYPE')) {
    const e = new WrongTypeError(message);
    (e as { cause?: unknown }).cause = err;
    return e;
  }
  if (message.startsWith('ERR ') && isReplyError(err)) {
    const e = new ArgumentError(message.slice(4));
    (e as { cause?: unknown }).cause = err;
    return e;
  }
  return err;
}

// An error the server replied (ioredis: ReplyError; node-redis:
// ErrorReply or SimpleError), not one of the client's own.
function isReplyError(err: Error): boolean {
  return /Reply|SimpleError/.test(err.name) || /Reply|SimpleError/.test(err.constructor.name);
}
