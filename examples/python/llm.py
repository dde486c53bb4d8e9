"""Calling an LLM provider within a user's limits: at most 4 requests in
flight (a lease), 60 requests a minute (THROTTLE) and 100,000 tokens a
minute, decided in one RL.ALLOW that takes the token limit's estimate as
its UNITS; when the provider answers, ``settle`` gives back the tokens the
estimate took too many (RL.REFUND) or charges those it took too few
(RL.CHARGE), in one round trip.

    python3 llm.py                     # against redis://127.0.0.1:6379
    REDIS_URL=redis://host:6380/0 python3 llm.py

The provider here is a stand-in that reports a usage the way providers do
(prompt plus completion tokens); the keys start with ``$KEY_PREFIX``
(default ``rl:llm:``).
"""

from __future__ import annotations

import os
import secrets
from dataclasses import replace

import redis
from redis_ratelimit_client import Lease, RateLimiter, Slide, Throttle

IN_FLIGHT = Lease(4, 120)  # 4 at once; a lease lasts 120 s unless released
REQUESTS = Throttle(59, 60, 60)  # 60 requests a minute, all at once if need be
TOKENS = Slide(100_000, 60)  # 100,000 tokens in any minute


def provider(prompt: str, max_tokens: int) -> tuple[str, int]:
    """The stand-in provider: an answer and its usage in tokens."""
    used = len(prompt.split()) * 50 + max_tokens // 2
    return f"an answer to {prompt!r}", used


def ask(rl: RateLimiter, user: str, prompt: str, max_tokens: int) -> str | None:
    keys = [f"{PREFIX}{{{user}}}:{name}" for name in ("inflight", "rpm", "tpm")]
    estimate = len(prompt.split()) * 50 + max_tokens  # the most it can cost
    lease_id = secrets.token_hex(16)
    decided = rl.allow([(keys[0], IN_FLIGHT), (keys[1], REQUESTS),
                        (keys[2], replace(TOKENS, units=estimate))], lease_id=lease_id)
    print(f"ask {user} estimate={estimate}: limited={int(decided.limited)} "
          f"binding={decided.index} retry_after={decided.retry_after} "
          f"remaining={[r.remaining for r in decided.results]}")
    if decided.limited:
        return None
    try:
        answer, used = provider(prompt, max_tokens)
    finally:
        rl.release(keys[0], lease_id)
    settled = rl.settle({keys[2]: TOKENS}, estimate, used)[0]
    left = settled.remaining if settled is not None else "unchanged"
    print(f"  used={used}: settled, tokens remaining={left}")
    return answer


PREFIX = os.environ.get("KEY_PREFIX", "rl:llm:")


def main() -> None:
    rl = RateLimiter(redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379")))
    ask(rl, "u1", "summarise this report", 2000)  # uses less than estimated: refund
    ask(rl, "u1", "write the whole novel", 40_000)
    ask(rl, "u1", "and its sequel", 80_000)  # more than the minute has left: refused


if __name__ == "__main__":
    main()
