"""Several limits on one request, with RL.ALLOW, for redis-py.

A policy is a list of limits, each a policy name, a key template and a spec,
written as in RL.ALLOW:

    user      rl:{user:$client}:m    SLIDE 100 60
    ip        rl:ip:$ip              THROTTLE 59 60 60
    endpoint  rl:endpoint:$path      SLICE 1000 60 6
    inflight  rl:{user:$client}:c    LEASE 10 60

The first three are rate limits: a request takes a unit that comes back with
time. The last is a concurrency limit (at most 10 requests in flight per
client): a request takes a slot, a lease named ``lease_id`` (a fresh one per
request), that it holds until ``release`` gives it back; if nobody ever does
(the process that took it crashed), the lease expires ``ttl`` seconds after
it was taken. So ``ttl`` must be longer than the longest request: one still
running after it no longer counts.

``allow`` asks for one unit (or slot) of every limit at once and answers
with the fields of each limit and the index of the binding one (the one
whose numbers belong in the response's headers):

- On a single server every key lives on it, so it is one RL.ALLOW: atomic,
  all or nothing.
- On Redis Cluster one RL.ALLOW can only name keys of one hash slot. With
  ``group_by_slot`` the limits are grouped by the slot of their key (keys
  that share a hash tag such as ``{user:42}`` share a slot), and each group
  is one RL.ALLOW, in the order of the limits. When a group refuses, the
  groups before it took their units already: ``allow`` gives them back with
  RL.REFUND (leases with RL.RELEASE), and peeks (RL.PEEK) at the groups
  after it so that the binding limit is the one a single RL.ALLOW would
  have named. Nothing stays counted for a refused request; a concurrent
  request may see the units of the earlier groups during the moment
  between the take and the give-back.

``give_back`` returns the units of an allowed request, for instance when the
handler failed (RL.REFUND, one call per rate limit); ``release`` its leases
(RL.RELEASE, one call per concurrency limit), when its response is over.
A request refused by a later slot group gets both from ``allow``.

Both take an optional ``deadline`` (a ``time.monotonic()`` instant): a
command that would start after it is not sent (``redis.TimeoutError``), so
that a caller that gave up waiting leaves nothing behind that it did not
see. The client's own timeouts bound each command.
"""

import re
import time
from typing import Dict, List, NamedTuple, Optional, Sequence

import redis
from redis.crc import key_slot

# The numbers each algorithm's spec takes, as in RL.ALLOW.
ALGORITHMS = {
    "THROTTLE": ("max_burst", "count", "period"),
    "SLIDE": ("limit", "window"),
    "SLICE": ("limit", "window", "slices"),
    "LEASE": ("limit", "ttl"),
}
# What a key template may name; ``render`` substitutes the request's values.
VARIABLES = ("client", "ip", "path", "method")
_VARIABLE = re.compile(r"\$([a-z]+)")


class Fields(NamedTuple):
    """The five fields every command replies, for one limit."""

    limited: int      # 0 = allowed, 1 = limited
    limit: int        # capacity
    remaining: int    # units that could still be taken right now
    retry_after: int  # seconds until this request would be allowed; -1 when allowed or never
    reset_after: int  # seconds until the limiter is full again


class Limit(NamedTuple):
    name: str              # the policy name in the RateLimit header fields
    key: str               # the key template
    spec: tuple            # ("SLIDE", 100, 60): the algorithm and its numbers

    @property
    def is_lease(self) -> bool:
        """A concurrency limit: what a request takes is a lease, held until
        ``release`` (or its ttl), not a unit that comes back with time."""
        return self.spec[0] == "LEASE"

    @property
    def window(self) -> Optional[int]:
        """The policy's window in seconds, the ``w`` of RateLimit-Policy whose
        ``q`` is the limit that the commands reply (the capacity). SLIDE and
        SLICE: their window. THROTTLE: the time its capacity takes to refill,
        capacity x period / count rounded up, so that q / w is its rate
        (count per period) and q its burst; its period would announce
        capacity units per period, a rate (max_burst + 1) / count times the
        real one. LEASE: none, a number in flight has no window (its ttl is
        how long a lease lasts when nobody releases it)."""
        algorithm, *numbers = self.spec
        if algorithm == "LEASE":
            return None
        if algorithm == "THROTTLE":
            max_burst, count, period = numbers
            return max(1, -(-(max_burst + 1) * period // count))  # exact ceil
        return numbers[ALGORITHMS[algorithm].index("window")]

    def render(self, values: Dict[str, str]) -> str:
        """The key for one request: ``$client`` and the others replaced."""
        return _VARIABLE.sub(lambda m: values[m.group(1)], self.key)


class Decision(NamedTuple):
    limited: bool
    binding: int                # index of the limit whose fields go into the headers
    fields: List[Fields]        # one per limit, in order
    taken: List[int]            # the limits that recorded the request (none when limited)

    @property
    def headline(self) -> Fields:
        return self.fields[self.binding]


def parse_limits(text: str) -> List[Limit]:
    """``name key ALGORITHM n ...`` entries separated by ``;``."""
    limits = []
    for entry in text.split(";"):
        words = entry.split()
        if not words:
            continue
        if len(words) < 3:
            raise ValueError(f"limit {entry.strip()!r}: expected `name key ALGORITHM numbers...`")
        name, key, algorithm, numbers = words[0], words[1], words[2].upper(), words[3:]
        if algorithm not in ALGORITHMS:
            raise ValueError(f"limit {name!r}: unknown algorithm {words[2]!r} "
                             f"(expected {', '.join(ALGORITHMS)})")
        expected = ALGORITHMS[algorithm]
        if len(numbers) != len(expected):
            raise ValueError(f"limit {name!r}: {algorithm} takes {' '.join(expected)}")
        if not all(n.isdigit() for n in numbers):
            raise ValueError(f"limit {name!r}: {' '.join(expected)} must be whole numbers")
        for variable in _VARIABLE.findall(key):
            if variable not in VARIABLES:
                raise ValueError(f"limit {name!r}: unknown ${variable} in {key!r} "
                                 f"(expected {', '.join('$' + v for v in VARIABLES)})")
        limits.append(Limit(name, key, (algorithm, *(int(n) for n in numbers))))
    if not limits:
        raise ValueError("no limit given")
    if len(limits) > 16:
        raise ValueError("at most 16 limits: RL.ALLOW takes 1 to 16 keys")
    names = [limit.name for limit in limits]
    if len(set(names)) != len(names):
        raise ValueError(f"policy names must differ: {names}")
    return limits


def keyslot(key: str) -> int:
    """The Redis Cluster hash slot of a key: CRC16 of the key, or of its hash
    tag (the part between the first ``{`` and the first ``}`` after it, when
    not empty), modulo 16384."""
    return key_slot(key.encode())


def slot_groups(keys: Sequence[str]) -> List[List[int]]:
    """The indices of ``keys`` grouped by hash slot, each group and the
    groups in the order of their first key."""
    groups: Dict[int, List[int]] = {}
    for i, key in enumerate(keys):
        groups.setdefault(keyslot(key), []).append(i)
    return list(groups.values())


def binding(fields: Sequence[Fields]) -> int:
    """RL.ALLOW's binding limit, from the fields of every limit: when any is
    limited, the limited one with the largest retry_after (one that can never
    fit, retry_after -1, counts as largest); otherwise the one with the least
    remaining, then the largest reset_after. Further ties: the lower index.
    (The server compares exact times; this compares the rounded ones.)"""
    limited = [i for i, f in enumerate(fields) if f.limited]
    if limited:
        def rank(i):
            retry = fields[i].retry_after
            return (retry < 0, retry, -i)
        return max(limited, key=rank)
    return min(range(len(fields)), key=lambda i: (fields[i].remaining, -fields[i].reset_after, i))


def _in_time(deadline: Optional[float]) -> None:
    if deadline is not None and time.monotonic() >= deadline:
        raise redis.TimeoutError("deadline passed")


def _several(client, command: str, limits, keys, group, quantity: int,
             deadline: Optional[float] = None, lease_id: Optional[str] = None):
    """One RL.ALLOW or RL.PEEK of the limits in ``group``. RL.ALLOW takes
    the leases of its LEASE limits as ``lease_id``; RL.PEEK, without an ID,
    asks whether a new lease would fit."""
    _in_time(deadline)
    args = [command, len(group)]
    args += [keys[i] for i in group]
    for i in group:
        args += limits[i].spec
    args += ["QUANTITY", quantity]
    if command == "RL.ALLOW" and any(limits[i].is_lease for i in group):
        args += ["ID", lease_id]
    options = {}
    if isinstance(client, redis.RedisCluster):
        # redis-py would ask a node for the keys of a command it does not
        # know (COMMAND GETKEYS) before every call; the slot is known here.
        options["target_nodes"] = client.get_node_from_key(keys[group[0]])
    reply = client.execute_command(*args, **options)
    return int(reply[0]) == 1, int(reply[5]) - 1, [Fields(*(int(v) for v in f)) for f in reply[6]]


def allow(client, limits: Sequence[Limit], keys: Sequence[str], quantity: int = 1,
          group_by_slot: bool = False, deadline: Optional[float] = None,
          lease_id: Optional[str] = None) -> Decision:
    """Takes ``quantity`` units of every rate limit and a lease named
    ``lease_id`` (required when there is a LEASE limit: a fresh one per
    request) of weight ``quantity`` on every concurrency limit, or nothing
    (see the module's documentation for Redis Cluster)."""
    if lease_id is None and any(limit.is_lease for limit in limits):
        raise ValueError("a LEASE limit needs a lease_id")
    groups = slot_groups(keys) if group_by_slot else [list(range(len(keys)))]
    fields: List[Optional[Fields]] = [None] * len(keys)
    taken: List[int] = []
    for n, group in enumerate(groups):
        limited, first, replied = _several(client, "RL.ALLOW", limits, keys, group, quantity,
                                           deadline, lease_id)
        for i, f in zip(group, replied):
            fields[i] = f
        if limited:
            give_back(client, limits, keys, taken, quantity, deadline)
            release(client, limits, keys, taken, lease_id, deadline)
            for later in groups[n + 1:]:
                _, _, replied = _several(client, "RL.PEEK", limits, keys, later, quantity,
                                         deadline)
                for i, f in zip(later, replied):
                    fields[i] = f
            return Decision(True, binding(fields), fields, [])
        taken += group
    if len(groups) == 1:
        return Decision(False, groups[0][first], fields, taken)
    return Decision(False, binding(fields), fields, taken)


def give_back(client, limits: Sequence[Limit], keys: Sequence[str], indices: Sequence[int],
              quantity: int = 1, deadline: Optional[float] = None) -> None:
    """RL.REFUND of ``quantity`` units on each rate limit in ``indices``
    (concurrency limits are left alone: ``release`` gives a lease back)."""
    for i in indices:
        if limits[i].is_lease:
            continue
        _in_time(deadline)
        client.execute_command("RL.REFUND", keys[i], *limits[i].spec, quantity)


def release(client, limits: Sequence[Limit], keys: Sequence[str], indices: Sequence[int],
            lease_id: Optional[str], deadline: Optional[float] = None) -> None:
    """RL.RELEASE of the lease ``lease_id`` on each concurrency limit in
    ``indices`` (rate limits are left alone). Releasing a lease that is gone
    already (released, expired) does nothing."""
    for i in indices:
        if not limits[i].is_lease:
            continue
        _in_time(deadline)
        client.execute_command("RL.RELEASE", keys[i], lease_id)
