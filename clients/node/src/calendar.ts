// RL.QUOTA's calendar for the Lua backend. The scripts have no time-zone
// database, so the client computes the period boundaries around its own
// clock and passes them as the first argument (ARGV[1]) of the scripts
// that may meet a QUOTA limit; the script picks the period that holds the server's TIME and refuses when
// the server's time is outside them. clients/lua/README.md describes the
// encoding; this file is a line-by-line port of the Python package's
// calendar (redis_ratelimit_client.lua_backend), which ports the module's
// rules (src/core/quota/calendar.rs), and answers the same bytes for the
// same instant and command line. The zones' offsets come from Intl
// (Node's ICU time-zone data).

import { ZONE_NAMES } from './zone-names';

/**
 * How far the server's clock may be from the client's for RL.QUOTA, in
 * seconds: the boundaries passed cover the client's now plus and minus this.
 */
export const MARGIN_SECONDS = 3600;

const PARAMS: Record<string, number> = { THROTTLE: 3, SLIDE: 2, SLICE: 3, LEASE: 2, QUOTA: 2 };
const OPTIONS: Record<string, readonly string[]> = { SLIDE: ['PRECISION'], QUOTA: ['TZ'] };
const UNITS = ['MINUTE', 'HOUR', 'DAY', 'WEEK', 'MONTH', 'YEAR'];

const MINUTE = 60;
const HOUR = 3600;
const DAY = 86400;
const MONTH_STARTS = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];

// Floor division and modulo (the remainder has the divisor's sign), as
// Python's // and % (and Rust's div_euclid for positive divisors).
function div(a: number, b: number): number {
  return Math.floor(a / b);
}
function mod(a: number, b: number): number {
  return a - b * Math.floor(a / b);
}

function isLeap(y: number): boolean {
  return y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);
}

function leapDaysBefore(year: number): number {
  const y = year - 1;
  return div(y, 4) - div(y, 100) + div(y, 400);
}

function yearStart(year: number): number {
  return 365 * (year - 1970) + leapDaysBefore(year) - leapDaysBefore(1970);
}

function firstOf(year: number, month: number): number {
  const m = Math.min(Math.max(month, 1), 12);
  return yearStart(year) + MONTH_STARTS[m - 1]! + (m > 2 && isLeap(year) ? 1 : 0);
}

function yearMonth(days: number): [number, number] {
  let year = 1970 + div(days * 400, 146097);
  while (yearStart(year) > days) year -= 1;
  while (yearStart(year + 1) <= days) year += 1;
  const dayOfYear = days - yearStart(year);
  let month = 12;
  while (month > 1 && firstOf(year, month) - yearStart(year) > dayOfYear) month -= 1;
  return [year, month];
}

// The latest start of `unit` (an index of UNITS) at or before the local time `local`.
function floorUnit(unit: number, local: number): number {
  const days = div(local, DAY);
  if (unit === 0) return local - mod(local, MINUTE);
  if (unit === 1) return local - mod(local, HOUR);
  if (unit === 2) return days * DAY;
  if (unit === 3) return (days - mod(days + 3, 7)) * DAY;
  const [year, month] = yearMonth(days);
  if (unit === 4) return firstOf(year, month) * DAY;
  return firstOf(year, 1) * DAY;
}

// The earliest start of `unit` after the local time `local`.
function nextUnit(unit: number, local: number): number {
  const floor = floorUnit(unit, local);
  if (unit === 0) return floor + MINUTE;
  if (unit === 1) return floor + HOUR;
  if (unit === 2) return floor + DAY;
  if (unit === 3) return floor + 7 * DAY;
  const [year, month] = yearMonth(div(floor, DAY));
  if (unit === 4) return (month === 12 ? firstOf(year + 1, 1) : firstOf(year, month + 1)) * DAY;
  return firstOf(year + 1, 1) * DAY;
}

const FIELDS = /^(\d{2})\/(\d{2})\/(\d{4}), (\d{2}):(\d{2}):(\d{2})$/;

/** A zone's UTC offsets and the instants they change, from Intl. */
class Rules {
  // A fixed offset (UTC, +HH:MM), or the formatter of a named zone.
  private readonly fixed: number | undefined;
  private readonly format: Intl.DateTimeFormat | undefined;
  private readonly changes = new Map<number, number[]>();

  constructor(zone: { fixed: number } | { name: string }) {
    if ('fixed' in zone) {
      this.fixed = zone.fixed;
    } else {
      this.format = new Intl.DateTimeFormat('en-US', {
        timeZone: zone.name,
        hourCycle: 'h23',
        year: 'numeric',
        month: '2-digit',
        day: '2-digit',
        hour: '2-digit',
        minute: '2-digit',
        second: '2-digit',
      });
    }
  }

  /** Seconds east of UTC at the instant `t` (Unix seconds). */
  offset(t: number): number {
    if (this.format === undefined) return this.fixed!;
    const date = new Date(t * 1000);
    const m = FIELDS.exec(this.format.format(date));
    let shown: number;
    if (m) {
      shown = Date.UTC(Number(m[3]), Number(m[1]) - 1, Number(m[2]), Number(m[4]), Number(m[5]), Number(m[6]));
    } else {
      // A year of other than four digits.
      const parts: Record<string, string> = {};
      for (const p of this.format.formatToParts(date)) parts[p.type] = p.value;
      const d = new Date(0);
      d.setUTCFullYear(Number(parts.year), Number(parts.month) - 1, Number(parts.day));
      d.setUTCHours(Number(parts.hour), Number(parts.minute), Number(parts.second), 0);
      shown = d.getTime();
    }
    return Math.round(shown / 1000) - t;
  }

  // The changes within one 30-day bucket, found hour by hour and then to
  // the second.
  private changesIn(bucket: number): number[] {
    const known = this.changes.get(bucket);
    if (known !== undefined) return known;
    const found: number[] = [];
    if (this.format !== undefined) {
      const lo = bucket * 30 * DAY;
      let prev = this.offset(lo - 1);
      let t = lo;
      const end = lo + 30 * DAY;
      while (t < end) {
        const step = Math.min(HOUR, end - t);
        const cur = this.offset(t + step - 1);
        if (cur !== prev) {
          // offset(a) === prev, offset(b) !== prev
          let a = t - 1;
          let b = t + step - 1;
          while (b - a > 1) {
            const mid = div(a + b, 2);
            if (this.offset(mid) === prev) a = mid;
            else b = mid;
          }
          found.push(b);
          prev = cur;
        }
        t += step;
      }
    }
    this.changes.set(bucket, found);
    return found;
  }

  /** The latest change at or before `t`. */
  changeAtOrBefore(t: number): number | undefined {
    const bucket = div(t, 30 * DAY);
    for (let b = bucket; b > bucket - 16; b--) {
      const cs = this.changesIn(b).filter((c) => c <= t);
      if (cs.length > 0) return cs[cs.length - 1];
    }
    return undefined;
  }

  /** The earliest change after `t`. */
  changeAfter(t: number): number | undefined {
    const bucket = div(t, 30 * DAY);
    for (let b = bucket; b < bucket + 16; b++) {
      const cs = this.changesIn(b).filter((c) => c > t);
      if (cs.length > 0) return cs[0];
    }
    return undefined;
  }
}

// The latest period start at or before `t`.
function start(t: number, unit: number, rules: Rules): number {
  let x = t;
  let off = rules.offset(t);
  for (let i = 0; i < 64; i++) {
    const shown = floorUnit(unit, x + off);
    const change = rules.changeAtOrBefore(x);
    if (change === undefined || !(shown - off < change)) return shown - off;
    const before = rules.offset(change - 1);
    if (shown >= change + before) return change;
    x = change - 1;
    off = before;
  }
  return x;
}

// The earliest period start after `t`.
function end(t: number, unit: number, rules: Rules): number {
  let x = t;
  let off = rules.offset(t);
  for (let i = 0; i < 64; i++) {
    const nxt = nextUnit(unit, x + off);
    const change = rules.changeAfter(x);
    if (change === undefined || !(nxt - off >= change)) return nxt - off;
    const after = rules.offset(change);
    if (nxt <= change + after || floorUnit(unit, change + after) === change + after) return change;
    x = change;
    off = after;
  }
  return x;
}

// Upper case of the ASCII letters only (as Python's bytes.upper()), read as latin1.
function asciiUpper(b: Buffer): string {
  return b.toString('latin1').replace(/[a-z]+/g, (s) => s.toUpperCase());
}

function isAsciiDigits(s: string): boolean {
  return /^[0-9]+$/.test(s);
}

let zoneNames: Map<string, string> | undefined;

/**
 * The zone names this client knows, by lower case: the IANA database's
 * names (zones and links, ZONE_NAMES) and the names Intl lists, each kept
 * when Intl has its rules; UTC apart.
 */
function names(): Map<string, string> {
  if (zoneNames) return zoneNames;
  const all = new Set<string>([...ZONE_NAMES, ...Intl.supportedValuesOf('timeZone')]);
  const map = new Map<string, string>();
  for (const name of all) {
    if (name.toUpperCase() === 'UTC' || !intlKnows(name)) continue;
    map.set(name.toLowerCase(), name);
  }
  zoneNames = map;
  return map;
}

function intlKnows(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

// The rules of the named zones last used, at most 256 (oldest dropped first).
const ruleCache = new Map<string, Rules>();
const UTC_RULES = new Rules({ fixed: 0 });

function namedRules(name: string): Rules {
  let rules = ruleCache.get(name);
  if (rules) {
    ruleCache.delete(name);
  } else {
    rules = new Rules({ name });
    if (ruleCache.size >= 256) ruleCache.delete(ruleCache.keys().next().value as string);
  }
  ruleCache.set(name, rules);
  return rules;
}

/**
 * A zone's canonical name and rules, as the module reads the TZ value;
 * undefined when this client's database does not know it.
 */
function zone(value: Buffer | undefined): [string, Rules] | undefined {
  if (value === undefined || asciiUpper(value) === 'UTC') return ['UTC', UTC_RULES];
  if (value[0] === 0x2b || value[0] === 0x2d) {
    // One character per byte, as Python's decode('ascii', 'replace').
    const text = [...value].map((b) => (b < 0x80 ? String.fromCharCode(b) : '\ufffd')).join('');
    if (text.length !== 6 || text[3] !== ':' || !isAsciiDigits(text.slice(1, 3) + text.slice(4))) return undefined;
    const minutes = Number(text.slice(4));
    const seconds = (Number(text.slice(1, 3)) * 60 + minutes) * 60;
    if (minutes >= 60 || seconds > 18 * 3600) return undefined;
    if (seconds === 0) return ['UTC', UTC_RULES];
    const sign = text[0] === '-' ? -1 : 1;
    return [text, new Rules({ fixed: sign * seconds })];
  }
  if (value.some((b) => b >= 0x80)) return undefined;
  const name = names().get(value.toString('latin1').toLowerCase());
  if (name === undefined) return undefined;
  return [name, namedRules(name)];
}

function segment(unitWord: Buffer | undefined, zoneValue: Buffer | undefined, now: number): string {
  const z = zone(zoneValue);
  const word = unitWord ? asciiUpper(unitWord) : '';
  const unit = UNITS.indexOf(word);
  if (z === undefined || unit < 0) return '!';
  const [name, rules] = z;
  const lo = now - MARGIN_SECONDS;
  const hi = now + MARGIN_SECONDS;
  const bounds = [start(lo, unit, rules)];
  while (bounds[bounds.length - 1]! <= hi) bounds.push(end(bounds[bounds.length - 1]!, unit, rules));
  const steps = bounds.map((b, i) => (i === 0 ? b : b - bounds[i - 1]!));
  return `${name}|${steps.join(',')}`;
}

/** numkeys as the scripts read it: 1 to 16, else undefined. */
export function numkeys(word: Buffer | undefined): number | undefined {
  if (word === undefined) return undefined;
  const text = word.toString('latin1');
  if (!isAsciiDigits(text)) return undefined;
  const n = Number(text);
  return n >= 1 && n <= 16 ? n : undefined;
}

type Spec = [unit: Buffer | undefined, tz: Buffer | undefined];

// The (unit, TZ value) of every QUOTA limit of a command line, in order,
// found as the module finds them.
function quotaSpecs(name: string, args: readonly Buffer[]): Spec[] {
  const specAt = (at: number): [string | undefined, number, Spec] => {
    const word = at < args.length ? asciiUpper(args[at]!) : '';
    const n = Object.prototype.hasOwnProperty.call(PARAMS, word) ? PARAMS[word]! : undefined;
    if (n === undefined || at + n >= args.length) return [undefined, args.length, [undefined, undefined]];
    let nxt = at + 1 + n;
    let tz: Buffer | undefined;
    const options = Object.prototype.hasOwnProperty.call(OPTIONS, word) ? OPTIONS[word]! : [];
    while (nxt < args.length && options.includes(asciiUpper(args[nxt]!))) {
      if (nxt + 1 < args.length && tz === undefined && word === 'QUOTA') tz = args[nxt + 1];
      nxt += 2;
    }
    return [word, nxt, [args[at + 2], tz]];
  };

  if (name === 'RL.QUOTA') {
    let tz: Buffer | undefined;
    let i = 3;
    while (i < args.length) {
      if (asciiUpper(args[i]!) === 'TZ') {
        if (i + 1 < args.length && tz === undefined) tz = args[i + 1];
        i += 2;
      } else {
        i += 1;
      }
    }
    return [[args.length > 2 ? args[2] : undefined, tz]];
  }
  if (name === 'RL.REFUND') {
    const [word, , spec] = specAt(1);
    return word === 'QUOTA' ? [spec] : [];
  }
  if (name === 'RL.ALLOW' || name === 'RL.PEEK') {
    const n = numkeys(args[0]) ?? 0;
    const out: Spec[] = [];
    let at = 1 + n;
    for (let i = 0; i < n; i++) {
      const [word, next, spec] = specAt(at);
      if (word === undefined) break;
      at = next;
      if (word === 'QUOTA') out.push(spec);
    }
    return out;
  }
  return [];
}

/** An argument of a command line: text (sent as UTF-8), bytes, or an integer. */
export type CommandArg = string | Uint8Array | number | bigint;

/** An argument's bytes, as they are sent. */
export function argBytes(a: CommandArg): Buffer {
  if (typeof a === 'string') return Buffer.from(a, 'utf8');
  if (a instanceof Uint8Array) return Buffer.from(a.buffer, a.byteOffset, a.byteLength);
  return Buffer.from(String(a), 'utf8');
}

/** A command line's name (its first element), in upper case. */
export function commandName(command: readonly CommandArg[]): string {
  const first = command[0]!;
  return (first instanceof Uint8Array ? Buffer.from(first).toString('utf8') : String(first)).toUpperCase();
}

/**
 * The scripts' first argument for a module command line (`['RL.QUOTA',
 * key, 100, 'DAY', 'TZ', 'Europe/Berlin']`): the period boundaries of each
 * of its QUOTA limits around `now` (a Date.now() instant or a Date; the
 * client's clock by default), or the empty string when it has none.
 */
export function calendarArgument(command: readonly CommandArg[], now?: number | Date): string {
  if (command.length === 0) throw new TypeError('a command line needs at least the command name');
  const specs = quotaSpecs(commandName(command), command.slice(1).map(argBytes));
  if (specs.length === 0) return '';
  const ms = now === undefined ? Date.now() : typeof now === 'number' ? now : now.getTime();
  if (!Number.isFinite(ms)) throw new RangeError(`now must be a finite instant, not ${String(now)}`);
  const at = Math.trunc(ms / 1000);
  return specs.map(([unit, tz]) => segment(unit, tz, at)).join(';');
}
