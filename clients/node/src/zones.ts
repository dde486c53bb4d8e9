// What the Lua backend computes itself: a time zone's UTC offsets around
// now, from Intl (clients/lua/README.md, "the head"), and the pass-through
// helpers of a command line's arguments. Every rule (the calendar, the
// grammar) is the scripts'.

import { ZONE_NAMES } from './zone-names';

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

const DAY = 86400;
const RANGE = 400 * DAY; // the offsets cover now - 400 days to now + 400 days
const STEP = 3600; // the search for changes steps an hour at a time

let zoneNames: Map<string, string> | undefined;

// The zone names this client knows, by lower case: the IANA database's
// names (zones and links, ZONE_NAMES: Intl resolves a link to ICU's
// canonical name, Asia/Kolkata to Asia/Calcutta, and lists only those) and
// the names Intl lists, each kept when Intl has its rules; UTC apart (the
// scripts read it, and fixed offsets, themselves).
function names(): Map<string, string> {
  if (zoneNames) return zoneNames;
  const map = new Map<string, string>();
  for (const name of new Set<string>([...ZONE_NAMES, ...Intl.supportedValuesOf('timeZone')])) {
    if (name.toUpperCase() === 'UTC') continue;
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: name });
    } catch {
      continue;
    }
    map.set(name.toLowerCase(), name);
  }
  zoneNames = map;
  return map;
}

const FIELDS = /^(\d{2})\/(\d{2})\/(\d{4}), (\d{2}):(\d{2}):(\d{2})$/;

function offsetOf(format: Intl.DateTimeFormat, t: number): number {
  const date = new Date(t * 1000);
  const m = FIELDS.exec(format.format(date));
  let shown: number;
  if (m) {
    shown = Date.UTC(Number(m[3]), Number(m[1]) - 1, Number(m[2]), Number(m[4]), Number(m[5]), Number(m[6]));
  } else {
    // A year of other than four digits.
    const parts: Record<string, string> = {};
    for (const p of format.formatToParts(date)) parts[p.type] = p.value;
    const d = new Date(0);
    d.setUTCFullYear(Number(parts.year), Number(parts.month) - 1, Number(parts.day));
    d.setUTCHours(Number(parts.hour), Number(parts.minute), Number(parts.second), 0);
    shown = d.getTime();
  }
  return Math.round(shown / 1000) - t;
}

interface Changes {
  readonly off0: number;
  readonly changes: readonly (readonly [number, number])[];
}

// The searches last made, at most 64 (oldest dropped first).
const cache = new Map<string, Changes>();

// The offset at lo and each change up to hi: hour by hour, then to the second.
function changesOf(name: string, lo: number, hi: number): Changes {
  const id = `${name}\0${lo}`;
  const known = cache.get(id);
  if (known) return known;
  const format = new Intl.DateTimeFormat('en-US', {
    timeZone: name,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  });
  const off0 = offsetOf(format, lo);
  let prev = off0;
  const changes: [number, number][] = [];
  let t = lo;
  while (t < hi) {
    const step = Math.min(STEP, hi - t);
    if (offsetOf(format, t + step) !== prev) {
      let a = t; // offset(a) === prev, offset(b) !== prev
      let b = t + step;
      while (b - a > 1) {
        const mid = Math.floor((a + b) / 2);
        if (offsetOf(format, mid) === prev) a = mid;
        else b = mid;
      }
      prev = offsetOf(format, b);
      changes.push([b, prev]);
      t = b; // another change may follow within the hour
      continue;
    }
    t += step;
  }
  const found = { off0, changes };
  if (cache.size >= 64) cache.delete(cache.keys().next().value as string);
  cache.set(id, found);
  return found;
}

/**
 * The head's segment of a TZ value: `written|canonical|lo|off0(|t|off)*`,
 * lo = now - 400 days (`now` in Unix seconds), each change up to now + 400
 * days; undefined when the zone database does not know the name. The
 * changes are searched once per zone and 30-day window (cached).
 */
export function zoneOffsets(written: Buffer, now: number): string | undefined {
  if (written.some((b) => b >= 0x80)) return undefined;
  const text = written.toString('latin1');
  const name = names().get(text.toLowerCase());
  if (name === undefined) return undefined;
  const base = Math.floor(now);
  const lo = base - RANGE;
  const hi = base + RANGE;
  // One search per 30-day window, cut to [lo, hi] here.
  const wLo = lo - (((lo % (30 * DAY)) + 30 * DAY) % (30 * DAY));
  const found = changesOf(name, wLo, wLo + 2 * RANGE + 60 * DAY);
  let off0 = found.off0;
  const tail: string[] = [];
  for (const [t, off] of found.changes) {
    if (t <= lo) off0 = off;
    else if (t <= hi) tail.push(`${t}|${off}`);
  }
  return [text, name, String(lo), String(off0), ...tail].join('|');
}
