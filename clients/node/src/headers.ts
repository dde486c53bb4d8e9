// A result as the HTTP header fields of examples/README.md: RateLimit-Policy
// and RateLimit (draft-ietf-httpapi-ratelimit-headers), the X-RateLimit-*
// trio, and Retry-After on a refusal.

import type { Limit } from './limits';
import type { AllowResult, Result } from './results';

/** A limit with its policy name (the quoted name in RateLimit-Policy and RateLimit). */
export interface NamedLimit {
  readonly name: string;
  readonly limit: Limit;
}

// A Structured Field String (RFC 9651): quoted, with \ and " escaped.
function sfString(value: string): string {
  if (!/^[\x20-\x7e]*$/.test(value)) throw new TypeError(`not a printable ASCII policy name: ${JSON.stringify(value)}`);
  return '"' + value.replace(/[\\"]/g, (c) => '\\' + c) + '"';
}

// A time of the reply in seconds: with MS the module answers milliseconds,
// rounded up here as the module rounds (-1 stays -1).
function seconds(value: number, ms: boolean): number {
  return ms && value > 0 ? Math.ceil(value / 1000) : value;
}

function item(named: NamedLimit, result: Result): string {
  const { limit } = named;
  const name = sfString(named.name);
  if (limit.kind === 'lease') return `${name};q=${result.limit};qu="concurrent-requests"`;
  const w = limit.window;
  return w === undefined ? `${name};q=${result.limit}` : `${name};q=${result.limit};w=${w}`;
}

function isAllowResult(r: Result): r is AllowResult {
  return Array.isArray((r as Partial<AllowResult>).results);
}

/**
 * The header fields for `result`: for one limit (a Limit, or `{ name, limit }`;
 * the name defaults to "default"), or for RL.ALLOW's result and its limits
 * in the same order (`[{ name, limit }, ...]`). Exactly RateLimit-Policy,
 * RateLimit, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset,
 * and Retry-After when limited and not -1. Times in seconds.
 */
export function rateLimitHeaders(
  result: Result | AllowResult,
  policy: Limit | NamedLimit | readonly NamedLimit[],
): Record<string, string> {
  const limits: readonly NamedLimit[] = Array.isArray(policy)
    ? policy
    : 'name' in (policy as object) && 'limit' in (policy as object)
      ? [policy as NamedLimit]
      : [{ name: 'default', limit: policy as Limit }];
  let items: string[];
  let binding: NamedLimit;
  if (isAllowResult(result)) {
    if (result.results.length !== limits.length) {
      throw new TypeError(`${result.results.length} results for ${limits.length} limits`);
    }
    items = limits.map((l, i) => item(l, result.results[i]!));
    binding = limits[result.index - 1]!;
  } else {
    if (limits.length !== 1) throw new TypeError('one result needs one limit');
    items = [item(limits[0]!, result)];
    binding = limits[0]!;
  }
  const ms = binding.limit.ms;
  const retryAfter = seconds(result.retryAfter, ms);
  const resetAfter = seconds(result.resetAfter, ms);
  const t = result.limited && retryAfter >= 0 ? retryAfter : resetAfter;
  const headers: Record<string, string> = {
    'RateLimit-Policy': items.join(', '),
    RateLimit: `${sfString(binding.name)};r=${result.remaining};t=${t}`,
    'X-RateLimit-Limit': String(result.limit),
    'X-RateLimit-Remaining': String(result.remaining),
    'X-RateLimit-Reset': String(resetAfter),
  };
  if (result.limited && retryAfter >= 0) headers['Retry-After'] = String(retryAfter);
  return headers;
}
