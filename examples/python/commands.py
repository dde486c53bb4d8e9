"""One call of each redis-ratelimit command with redis-ratelimit-client.

    python3 commands.py                     # against redis://127.0.0.1:6379
    REDIS_URL=redis://host:6380/0 python3 commands.py

The keys are ``$KEY_PREFIX`` (default ``rl:example:``) followed by the
algorithm, so a second run shows the limiters being used up (except the
RL.SLICE one, whose unit RL.REFUND gives back at the end).
"""

from __future__ import annotations

import dataclasses
import os

import redis
from redis_ratelimit_client import AllowResult, RateLimiter, Result, Slice, Slide


def show(result: Result) -> str:
    fields = (f"limited={int(result.limited)} limit={result.limit} remaining={result.remaining}"
              f" retry_after={result.retry_after} reset_after={result.reset_after}")
    if isinstance(result, AllowResult):
        fields += f" binding={result.index}"
    return fields


def main() -> None:
    rl = RateLimiter(redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379")))
    prefix = os.environ.get("KEY_PREFIX", "rl:example:")

    print(f"RL.THROTTLE {prefix}throttle 15 30 60")  # 30 per minute, bursts of 16
    print("  " + show(rl.throttle(prefix + "throttle", 15, 30, 60)))
    print(f"RL.SLIDE {prefix}slide 10 60")  # 10 per minute, exact
    print("  " + show(rl.slide(prefix + "slide", 10, 60)))
    print(f"RL.SLICE {prefix}slice 10 60 6")  # 10 per minute in 6 slices
    print("  " + show(rl.slice(prefix + "slice", 10, 60, 6)))

    # Three limits of one subject at once; the hash tag keeps them in one slot.
    subject = prefix + "{user:42}:"
    limits = {subject + "s": Slide(10, 1), subject + "m": Slice(100, 60, 12),
              subject + "h": Slice(1000, 3600, 60)}
    for name, call in (("RL.ALLOW", rl.allow), ("RL.PEEK", rl.peek)):
        result = call(limits)
        print(f"{name} 3 {' '.join(limits)} SLIDE 10 1 SLICE 100 60 12 SLICE 1000 3600 60")
        print("  " + show(result))
        for i, each in enumerate(result.results, start=1):
            print(f"  limit {i}: " + show(each))

    state = rl.inspect(prefix + "slide")
    print(f"RL.INSPECT {prefix}slide")
    if state is not None:
        fields = {"type": state.type, **dataclasses.asdict(state)}
        print("  " + " ".join(f"{k}={v}" for k, v in fields.items()))

    print(f"RL.REFUND {prefix}slice SLICE 10 60 6 1")  # gives back the unit taken above
    print("  " + show(rl.refund(prefix + "slice", Slice(10, 60, 6), 1)))


if __name__ == "__main__":
    main()
