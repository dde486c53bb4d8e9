"""One call of each redis-ratelimit command with redis-py, printing the reply.

    python3 commands.py                     # against redis://127.0.0.1:6379
    REDIS_URL=redis://host:6380/0 python3 commands.py

Every limiter replies with the same five integers; ``Reply`` names them.
RL.ALLOW and RL.PEEK reply with the binding limit's five, its index, and the
five of every limit; RL.INSPECT with field-value pairs. The keys are
``$KEY_PREFIX`` (default ``rl:example:``) followed by the algorithm, so a
second run shows the limiters being used up (except the RL.SLICE one, whose
unit RL.REFUND gives back at the end).
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


def five(values) -> Reply:
    return Reply(*(int(v) for v in values))


def show(reply: Reply, extra: str = "") -> str:
    return " ".join(f"{name}={value}" for name, value in reply._asdict().items()) + extra


def text(value) -> str:
    """A reply value as text: bytes decoded, lists comma-separated."""
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, list):
        return ",".join(text(v) for v in value)
    return str(value)


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
        print(" ".join(str(a) for a in args))
        print("  " + show(five(client.execute_command(*args))))

    # Three limits of one subject, decided at once: 10 per second (exact),
    # 100 per minute (5 s slices), 1,000 per hour (1 min slices). The hash
    # tag {user:42} keeps the three keys in one slot on Redis Cluster too.
    subject = prefix + "{user:42}:"
    several = (3, subject + "s", subject + "m", subject + "h",
               "SLIDE", 10, 1, "SLICE", 100, 60, 12, "SLICE", 1000, 3600, 60)
    # RL.ALLOW takes one unit of each, or of none; RL.PEEK answers what
    # RL.ALLOW would answer now, changing nothing.
    for command in ("RL.ALLOW", "RL.PEEK"):
        reply = client.execute_command(command, *several)
        print(" ".join(str(a) for a in (command, *several)))
        print("  " + show(five(reply[:5]), f" binding={int(reply[5])}"))
        for i, fields in enumerate(reply[6], start=1):
            print(f"  limit {i}: " + show(five(fields)))

    # What a key holds, without knowing its parameters: field-value pairs,
    # a dict under RESP3 (redis-py's default from version 8).
    key = prefix + "slide"
    pairs = client.execute_command("RL.INSPECT", key)
    if not isinstance(pairs, dict):
        pairs = dict(zip(pairs[::2], pairs[1::2]))
    print(f"RL.INSPECT {key}")
    print("  " + " ".join(f"{text(name)}={text(value)}" for name, value in pairs.items()))

    # Gives back the unit RL.SLICE took above (the request failed, say).
    args = ("RL.REFUND", prefix + "slice", "SLICE", 10, 60, 6, 1)
    print(" ".join(str(a) for a in args))
    print("  " + show(five(client.execute_command(*args))))


if __name__ == "__main__":
    main()
