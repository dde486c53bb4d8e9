"""One call of each redis-ratelimit command with redis-py, printing the reply.

    python3 commands.py                     # against redis://127.0.0.1:6379
    REDIS_URL=redis://host:6380/0 python3 commands.py

Every command replies with the same five integers; ``Reply`` names them.
The keys are ``$KEY_PREFIX`` (default ``rl:example:``) followed by the
algorithm, so a second run shows the limiter being used up.
"""

import os
from typing import NamedTuple

import redis


class Reply(NamedTuple):
    limited: int      # 0 = allowed, 1 = limited
    limit: int        # capacity
    remaining: int    # units that could still be taken right now
    retry_after: int  # seconds until this request would be allowed; -1 when allowed
    reset_after: int  # seconds until the limiter is full again


def call(client: redis.Redis, *args) -> Reply:
    return Reply(*(int(v) for v in client.execute_command(*args)))


def main() -> None:
    client = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379"))
    prefix = os.environ.get("KEY_PREFIX", "rl:example:")
    calls = [
        # GCRA: 30 per 60 s, bursts of 15 more (capacity 16).
        ("RL.THROTTLE", prefix + "throttle", 15, 30, 60),
        # Exact sliding log: 10 per 60 s.
        ("RL.SLIDE", prefix + "slide", 10, 60),
        # 10 per 60 s counted in 6 slices of 10 s.
        ("RL.SLICE", prefix + "slice", 10, 60, 6),
    ]
    for args in calls:
        reply = call(client, *args)
        print(" ".join(str(a) for a in args))
        print("  " + " ".join(f"{name}={value}" for name, value in reply._asdict().items()))


if __name__ == "__main__":
    main()
