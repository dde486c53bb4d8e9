"""A policy: named limits whose keys come from a request, decided together
(one RL.ALLOW, or one per hash slot on a cluster, with give-back), and what
the middlewares share: the decision's steps, its headers, the outage log."""

from __future__ import annotations

import ipaddress
import logging
import re
import threading
import time
from dataclasses import dataclass, field, replace
from typing import (
    Any,
    Callable,
    Dict,
    Generator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
)

import redis.exceptions
from redis.crc import key_slot

from . import _commands as c
from ._commands import Command
from ._errors import CommandError, ModuleNotLoadedError
from ._limits import Lease, Limit, Quota, Slice, Slide, Throttle
from ._results import AllowResult, Result
from .headers import rate_limit_headers

Steps = Generator[Union[Command[Any], List[Command[Any]]], Any, Any]
"""A decision's steps: each yields a command (sent alone) or a list of
commands (sent in one pipeline; the list of their replies comes back)."""


@dataclass(frozen=True)
class RequestInfo:
    """What a key template may use from a request. ``headers`` have
    lower-case names (a field sent on several lines: its values joined with
    ``, ``). ``client_ip`` is ``$ip``: the peer address, or from a trusted
    proxy the forwarded one; ``client`` is ``$client`` when not empty (an
    Identity fills both: docs/middleware.md)."""

    method: str
    path: str
    client_ip: str
    headers: Mapping[str, str] = field(default_factory=dict)
    client: str = ""


def default_variables(request: RequestInfo) -> Dict[str, str]:
    """``$client`` (``request.client``, or else ``$ip``), ``$ip`` (the
    client address), ``$path`` (without the query) and ``$method``."""
    return {
        "client": request.client or request.client_ip,
        "ip": request.client_ip,
        "path": request.path,
        "method": request.method,
    }


TRUST_EVERY_PEER = "*"


def _network(text: str) -> Union[ipaddress.IPv4Network, ipaddress.IPv6Network]:
    try:
        return ipaddress.ip_network(text.strip(), strict=False)
    except ValueError:
        raise ValueError(f"trusted_proxies: {text!r} is not an IP address or CIDR range") from None


def _plain_address(text: str) -> str:
    """An address as ``$ip`` writes it: an IPv4-mapped IPv6 one as IPv4."""
    if text.startswith("::ffff:") and "." in text:
        return text[len("::ffff:"):]
    return text


def _forwarded_for(value: str) -> List[str]:
    """The ``for=`` of each element of a Forwarded field (RFC 7239), as an
    address: unquoted, without brackets or port."""
    found = []
    for element in value.split(","):
        for pair in element.split(";"):
            name, _, v = pair.strip().partition("=")
            if name.strip().lower() != "for":
                continue
            v = v.strip().strip('"')
            if v.startswith("["):
                v = v[1:].split("]", 1)[0]
            elif v.count(":") == 1:
                v = v.split(":", 1)[0]
            found.append(v)
    return found


class Identity:
    """Who a request comes from (docs/middleware.md, Keys and identity):
    ``$ip`` is the peer address unless the peer is one of
    ``trusted_proxies`` (addresses and CIDR ranges, or ``"*"``); from a
    trusted peer, the rightmost untrusted entry of ``proxy_header``
    (``X-Forwarded-For`` or ``Forwarded``). ``$client`` is ``client_id(request)``
    when it gives a non-empty string, else the ``client_header`` field from a
    trusted peer, else ``$ip``."""

    def __init__(self, trusted_proxies: Union[str, Sequence[str]] = (),
                 proxy_header: str = "X-Forwarded-For",
                 client_header: Optional[str] = None,
                 client_id: Optional[Callable[[RequestInfo], Optional[str]]] = None) -> None:
        if isinstance(trusted_proxies, str):
            trusted_proxies = [p for p in trusted_proxies.split(",") if p.strip()]
        self.every = any(p.strip() == TRUST_EVERY_PEER for p in trusted_proxies)
        self.networks = [_network(p) for p in trusted_proxies if p.strip() != TRUST_EVERY_PEER]
        if proxy_header.lower() not in ("x-forwarded-for", "forwarded"):
            raise ValueError(f"proxy_header must be X-Forwarded-For or Forwarded, "
                             f"not {proxy_header!r}")
        self.proxy_header = proxy_header.lower()
        self.client_header = client_header.lower() if client_header else None
        self.client_id = client_id

    def trusted(self, address: str) -> bool:
        if self.every:
            return True
        if not self.networks:
            return False
        try:
            ip = ipaddress.ip_address(_plain_address(address))
        except ValueError:
            return False
        return any(ip.version == n.version and ip in n for n in self.networks)

    def resolve(self, method: str, path: str, peer: str, headers: Mapping[str, str]
                ) -> RequestInfo:
        peer = _plain_address(peer)
        ip, client = peer, ""
        if self.trusted(peer):
            value = headers.get(self.proxy_header, "")
            hops = (_forwarded_for(value) if self.proxy_header == "forwarded"
                    else [h.strip() for h in value.split(",")])
            hops = [h for h in hops if h]
            if hops:
                ip = next((h for h in reversed(hops) if not self.trusted(h)), hops[0])
                ip = _plain_address(ip)
            if self.client_header is not None:
                client = headers.get(self.client_header, "").strip()
        request = RequestInfo(method, path, ip, headers, client)
        if self.client_id is not None:
            chosen = self.client_id(request)
            if chosen:
                request = RequestInfo(method, path, ip, headers, chosen)
        return request


_VARIABLE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_NAMES = ("client", "ip", "path", "method")
KeyFunction = Callable[[RequestInfo], str]


@dataclass(frozen=True)
class Rule:
    """One limit of a policy: its name in the header fields and the
    metrics, its key (a template naming ``$client``, ``$ip``, ``$path``,
    ``$method``, or a function of the request) and the limit. The limit's
    ``block`` blocks the key after a refusal; its ``shadow`` makes the rule
    a shadow rule: decided, counted, never refusing (docs/middleware.md)."""

    name: str
    key: Union[str, KeyFunction]
    limit: Limit

    @property
    def shadow(self) -> bool:
        return self.limit.shadow


class Policy:
    """Rules decided together for each request; ``variables`` gives the
    values of a template's ``$names``."""

    def __init__(self, rules: Sequence[Rule],
                 variables: Callable[[RequestInfo], Mapping[str, str]] = default_variables
                 ) -> None:
        if not 1 <= len(rules) <= 16:
            raise ValueError("a policy has 1 to 16 rules (RL.ALLOW takes 1 to 16 keys)")
        names = [r.name for r in rules]
        if len(set(names)) != len(names):
            raise ValueError(f"rule names must differ: {names}")
        self.rules = tuple(rules)
        self.variables = variables
        self.leased = any(isinstance(r.limit, Lease) for r in rules)
        if variables is default_variables:
            for rule in self.rules:
                if callable(rule.key):
                    continue
                for name in _VARIABLE.findall(rule.key):
                    if name not in _NAMES:
                        raise ValueError(f"rule {rule.name!r}: unknown ${name} in {rule.key!r} "
                                         "(expected $client, $ip, $path, $method)")

    @classmethod
    def parse(cls, text: str,
              variables: Callable[[RequestInfo], Mapping[str, str]] = default_variables
              ) -> Policy:
        """A policy from text: ``name key ALGORITHM numbers...`` entries
        separated by ``;``, the spec as RL.ALLOW takes it (``QUOTA limit unit
        [TZ zone]``, ``SLIDE limit window [PRECISION d]``, then ``BLOCK b``,
        ``UNITS n``, ``SHADOW``). Only the shape is checked here; the module
        checks the numbers."""
        rules = []
        for entry in text.split(";"):
            words = entry.split()
            if not words:
                continue
            if len(words) < 4:
                raise ValueError(
                    f"rule {entry.strip()!r}: expected `name key ALGORITHM numbers...`")
            name, key, kind, rest = words[0], words[1], words[2].upper(), words[3:]
            rules.append(Rule(name, key, _limit(name, kind, rest)))
        return cls(rules, variables)

    def keys(self, request: RequestInfo) -> List[str]:
        values: Mapping[str, str] = {}
        if any(not callable(rule.key) for rule in self.rules):
            values = self.variables(request)

        def value(m: re.Match[str]) -> str:
            return values[m.group(1)]

        return [rule.key(request) if callable(rule.key) else _VARIABLE.sub(value, rule.key)
                for rule in self.rules]

    def headers(self, decision: Decision) -> Dict[str, str]:
        return rate_limit_headers(decision.result, [r.limit for r in self.rules],
                                  [r.name for r in self.rules])


@dataclass(frozen=True)
class Route:
    """Rules for chosen routes, decided with the middleware's own in one
    RL.ALLOW: ``path`` exact (``/login``) or a prefix ending in ``*``
    (``/api/*``), ``methods`` upper-case (None: every method)."""

    path: str
    policy: Policy
    methods: Optional[Sequence[str]] = None

    def matches(self, method: str, path: str) -> bool:
        if self.methods is not None and method.upper() not in self.methods:
            return False
        if self.path.endswith("*"):
            return path.startswith(self.path[:-1])
        return path == self.path


class Plan:
    """What a middleware decides for a request: its policy's rules and those
    of every route that matches, or nothing when ``skip`` says so."""

    def __init__(self, policy: Policy, routes: Sequence[Route] = (),
                 skip: Optional[Callable[[RequestInfo], bool]] = None) -> None:
        for route in routes:
            names = [r.name for r in policy.rules] + [r.name for r in route.policy.rules]
            if len(set(names)) != len(names):
                raise ValueError(f"rule names must differ across the policy and route "
                                 f"{route.path!r}: {names}")
            if len(names) > 16:
                raise ValueError(f"the policy and route {route.path!r} have {len(names)} rules; "
                                 "RL.ALLOW takes 1 to 16 keys")
        self.policy = policy
        self.routes = tuple(routes)
        self.skip = skip

    def rules(self, request: RequestInfo) -> Optional[Tuple[Tuple[Rule, ...], List[str]]]:
        """The rules and their keys for ``request``; None: skip it."""
        if self.skip is not None and self.skip(request):
            return None
        rules = self.policy.rules
        keys = self.policy.keys(request)
        for route in self.routes:
            if route.matches(request.method, request.path):
                rules += route.policy.rules
                keys += route.policy.keys(request)
        if len(rules) > 16:
            raise ValueError(f"{len(rules)} rules match {request.method} {request.path}; "
                             "RL.ALLOW takes 1 to 16 keys")
        return rules, keys


def decision_headers(rules: Sequence[Rule], decision: Decision) -> Dict[str, str]:
    """The header fields of the enforced rules (a shadow rule is not the
    client's business); none when every rule is shadow."""
    enforced = [i for i, r in enumerate(rules) if not r.limit.shadow]
    if not enforced:
        return {}
    result = decision.result
    if len(enforced) < len(rules):
        results = tuple(result.results[i] for i in enforced)
        result = result._replace(results=results, index=enforced.index(result.index - 1) + 1)
    return rate_limit_headers(result, [rules[i].limit for i in enforced],
                              [rules[i].name for i in enforced])


def outcomes(rules: Sequence[Rule], decision: Decision) -> List[str]:
    """Each rule's own outcome (the metrics' ``ratelimit.result``):
    ``allowed``, ``limited`` (an enforced rule that refused) or
    ``shadow_limited`` (a shadow rule that would have refused)."""
    out = []
    for rule, result in zip(rules, decision.result.results):
        if not result.limited:
            out.append("allowed")
        else:
            out.append("shadow_limited" if rule.limit.shadow else "limited")
    return out


def merge_fields(response: Sequence[Tuple[Any, Any]], fields: Mapping[str, str]
                 ) -> List[Tuple[str, str]]:
    """The decision's ``fields`` the response does not have already (by
    name, without case): a handler's own field wins, none is sent twice."""
    have = {(k.decode("latin-1") if isinstance(k, bytes) else str(k)).lower()
            for k, _ in response}
    return [(k, v) for k, v in fields.items() if k.lower() not in have]


def _limit(name: str, kind: str, words: List[str]) -> Limit:
    block: Optional[int] = None
    units: Optional[int] = None
    shadow = False
    rest: List[str] = []
    i = 0
    while i < len(words):
        word = words[i].upper()
        if word == "SHADOW":
            shadow = True
            i += 1
        elif word in ("BLOCK", "UNITS") and i + 1 < len(words) and words[i + 1].isdigit():
            if word == "BLOCK":
                block = int(words[i + 1])
            else:
                units = int(words[i + 1])
            i += 2
        else:
            rest.append(words[i])
            i += 1
    limit = _plain_limit(name, kind, rest)
    if block is not None:
        if isinstance(limit, Lease):
            raise ValueError(f"rule {name!r}: LEASE takes no BLOCK")
        limit = replace(limit, block=block)
    if units is not None or shadow:
        limit = replace(limit, units=units, shadow=shadow)
    return limit


def _plain_limit(name: str, kind: str, words: List[str]) -> Limit:
    def ints(n: int) -> List[int]:
        if len(words) != n or not all(w.lstrip("-").isdigit() for w in words):
            raise ValueError(f"rule {name!r}: {kind} takes {n} whole numbers, not {words}")
        return [int(w) for w in words]

    if kind == "THROTTLE":
        max_burst, count, period = ints(3)
        return Throttle(max_burst, count, period)
    if kind == "SLICE":
        limit, window, slices = ints(3)
        return Slice(limit, window, slices)
    if kind == "LEASE":
        limit, ttl = ints(2)
        return Lease(limit, ttl)
    if kind == "SLIDE":
        precision = None
        if len(words) == 4 and words[2].upper() == "PRECISION":
            precision = int(words[3])
            words = words[:2]
        limit, window = ints(2)
        return Slide(limit, window, precision)
    if kind == "QUOTA":
        if len(words) == 2:
            return Quota(int(words[0]), words[1])
        if len(words) == 4 and words[2].upper() == "TZ":
            return Quota(int(words[0]), words[1], words[3])
        raise ValueError(f"rule {name!r}: QUOTA takes limit unit [TZ zone]")
    raise ValueError(f"rule {name!r}: unknown algorithm {kind!r} "
                     "(expected THROTTLE, SLIDE, SLICE, LEASE or QUOTA)")


@dataclass(frozen=True)
class Decision:
    """A policy's answer for one request. ``result`` is as RL.ALLOW's (its
    ``index`` 1-based, an enforced rule's; ``results`` every rule's own,
    shadow rules' included); ``taken`` the 0-based positions of the rules
    that recorded the request (none when limited; not a shadow rule that
    would have refused)."""

    result: AllowResult
    taken: Tuple[int, ...]

    @property
    def limited(self) -> bool:
        return self.result.limited


def slot_groups(keys: Sequence[str]) -> List[List[int]]:
    """Positions of ``keys`` grouped by hash slot, in order of first key."""
    groups: Dict[int, List[int]] = {}
    for i, key in enumerate(keys):
        groups.setdefault(key_slot(key.encode()), []).append(i)
    return list(groups.values())


def binding(results: Sequence[Result]) -> int:
    """RL.ALLOW's binding limit (0-based) from every limit's result: the
    limited one with the longest wait (never fitting counts as longest), or
    when none is limited the least remaining, then the longest reset."""
    limited = [i for i, r in enumerate(results) if r.limited]
    if limited:
        return max(limited, key=lambda i: (results[i].retry_after < 0, results[i].retry_after, -i))
    return min(range(len(results)),
               key=lambda i: (results[i].remaining, -results[i].reset_after, i))


def _entries(rules: Sequence[Rule], keys: Sequence[str], group: Sequence[int]
             ) -> List[Tuple[str, Limit]]:
    return [(keys[i], rules[i].limit) for i in group]


def _recorded(rules: Sequence[Rule], group: Sequence[int], results: Sequence[Result]
              ) -> List[int]:
    """The positions of an allowed call that recorded: all but the shadow
    rules that would have refused."""
    return [i for i, r in zip(group, results) if not (rules[i].limit.shadow and r.limited)]


def decide(rules: Sequence[Rule], keys: Sequence[str], group_by_slot: bool,
           lease_id: Optional[str], quantity: int = 1) -> Steps:
    """The steps of one decision (a generator of commands; send each one's
    parsed reply; its return value is the Decision).

    Shadow rules go as SHADOW specs in the same RL.ALLOW. The module refuses
    a call whose every spec is SHADOW, so rules that have no enforced rule
    beside them (every rule of the request, or of a hash slot) are sent
    last, in one pipeline, each as ``RL.ALLOW 1 key spec`` without SHADOW
    (RL.PEEK when an enforced rule refused), their refusals ignored: each
    key records what a shadow limit would."""
    groups = slot_groups(keys) if group_by_slot else [list(range(len(keys)))]
    enforced = [g for g in groups if any(not rules[i].limit.shadow for i in g)]
    alone = [i for g in groups if all(rules[i].limit.shadow for i in g) for i in g]
    if len(enforced) == 1 and not alone:
        group = enforced[0]
        leased = any(isinstance(rules[i].limit, Lease) for i in group)
        reply: AllowResult = yield c.several(
            "ALLOW", _entries(rules, keys, group), quantity, False, lease_id if leased else None
        )
        taken = () if reply.limited else tuple(_recorded(rules, group, reply.results))
        return Decision(reply, taken)
    results: List[Optional[Result]] = [None] * len(keys)
    recorded: List[int] = []
    refused = False
    for n, group in enumerate(enforced):
        leased = any(isinstance(rules[i].limit, Lease) for i in group)
        reply = yield c.several(
            "ALLOW", _entries(rules, keys, group), quantity, False, lease_id if leased else None
        )
        for i, r in zip(group, reply.results):
            results[i] = r
        if reply.limited:
            yield from give_back(rules, keys, recorded, quantity)
            yield from release(rules, keys, recorded, lease_id)
            for later in enforced[n + 1:]:
                peeked: AllowResult = yield c.several(
                    "PEEK", _entries(rules, keys, later), quantity, False, None
                )
                for i, r in zip(later, peeked.results):
                    results[i] = r
            refused = True
            break
        recorded += _recorded(rules, group, reply.results)
    if alone:
        name = "PEEK" if refused else "ALLOW"
        replies: List[AllowResult] = yield [
            c.several(name, [(keys[i], replace(rules[i].limit, shadow=False))], quantity, False,
                      lease_id if isinstance(rules[i].limit, Lease) else None)
            for i in alone
        ]
        for i, one in zip(alone, replies):
            results[i] = one.results[0]
            if not refused and not one.limited:
                recorded.append(i)
    return Decision(_combined(rules, results), () if refused else tuple(sorted(recorded)))


def _combined(rules: Sequence[Rule], results: Sequence[Optional[Result]]) -> AllowResult:
    done = [r for r in results if r is not None]
    enforced = [i for i, rule in enumerate(rules) if not rule.limit.shadow]
    if enforced:
        b = enforced[binding([done[i] for i in enforced])]
        head = done[b]
    else:
        # Every rule shadow: allowed; the fields of the least remaining.
        b = binding([r._replace(limited=False) for r in done])
        head = done[b]._replace(limited=False, retry_after=-1)
    return AllowResult(head.limited, head.limit, head.remaining, head.retry_after,
                       head.reset_after, head.ms, b + 1, tuple(done))


def give_back(rules: Sequence[Rule], keys: Sequence[str], taken: Sequence[int],
              quantity: int = 1) -> Steps:
    """RL.REFUND of the rate limits among ``taken`` (not the leases): each
    what it recorded, its ``units`` or else ``quantity``."""
    for i in taken:
        limit = rules[i].limit
        units = quantity if limit.units is None else limit.units
        if not isinstance(limit, Lease) and units > 0:
            yield c.refund(keys[i], limit, units, False)


def release(rules: Sequence[Rule], keys: Sequence[str], taken: Sequence[int],
            lease_id: Optional[str]) -> Steps:
    """RL.RELEASE of the request's lease on the concurrency limits among ``taken``."""
    if lease_id is None:
        return
    for i in taken:
        if isinstance(rules[i].limit, Lease):
            yield c.release(keys[i], lease_id)


def leases(rules: Sequence[Rule]) -> List[int]:
    return [i for i, r in enumerate(rules) if isinstance(r.limit, Lease)]


class DeadlinePassed(redis.exceptions.TimeoutError):
    """The decision's deadline passed before its next command was sent."""


def check_deadline(deadline: Optional[float]) -> None:
    if deadline is not None and time.monotonic() >= deadline:
        raise DeadlinePassed("deadline passed")


def is_configuration_error(error: BaseException) -> bool:
    """An error that no retry cures (docs/middleware.md, Responses): a
    refused argument (ERR), a WRONGTYPE key, the module missing, a cross-slot
    call, a denied command, bad credentials. The rest (no connection, no
    answer in time, a cluster in flux) is an outage."""
    if isinstance(error, (CommandError, ModuleNotLoadedError, redis.exceptions.NoPermissionError,
                          redis.exceptions.AuthenticationError,
                          redis.exceptions.AuthorizationError)):
        return True
    if isinstance(error, redis.exceptions.ResponseError):
        return str(error).split(" ", 1)[0] in ("CROSSSLOT", "NOPERM", "NOAUTH", "WRONGPASS")
    return isinstance(error, (ValueError, TypeError))


def failure_answer(error: BaseException) -> Tuple[int, str]:
    """The status and body of a request the limiter could not decide,
    failing closed: 500 for a configuration error, 503 for an outage."""
    if is_configuration_error(error):
        return 500, "rate limiter misconfigured\n"
    return 503, "rate limiter unavailable\n"


class Health:
    """The log of a middleware's limiter: one line when its calls start
    failing and one when they answer again (however many requests in
    between); a configuration error once per distinct message, at ERROR,
    named as such (it is a bug to fix, not an outage to wait out)."""

    def __init__(self, logger: logging.Logger, fail_open: bool) -> None:
        self.logger = logger
        self.fail_open = fail_open
        self.lock = threading.Lock()
        self.failing_since: Optional[float] = None
        self.failures = 0
        self.reported: set[str] = set()

    def failed(self, error: BaseException) -> None:
        cause = f"{type(error).__name__}: {error}"
        if is_configuration_error(error):
            then = ("letting requests through unlimited (fail open)" if self.fail_open
                    else "answering 500")
            with self.lock:
                if cause in self.reported or len(self.reported) >= 100:
                    return
                self.reported.add(cause)
            self.logger.error(
                "rate limiter configuration error (%s): not an outage, the policy or its keys "
                "must be fixed; %s meanwhile", cause, then)
            return
        with self.lock:
            self.failures += 1
            if self.failing_since is not None:
                return
            self.failing_since = time.monotonic()
        then = ("letting requests through unlimited (fail open)" if self.fail_open
                else "answering 503")
        self.logger.warning("rate limiter unavailable (%s); %s until it answers again",
                            cause, then)

    def succeeded(self) -> None:
        if self.failing_since is None:
            return
        with self.lock:
            if self.failing_since is None:
                return
            seconds = time.monotonic() - self.failing_since
            failures, self.failing_since, self.failures = self.failures, None, 0
        self.logger.warning("rate limiter available again, after %d failed calls in %.1f s",
                            failures, seconds)


OUTAGES: Tuple[type[BaseException], ...] = (
    redis.exceptions.RedisError,
    OSError,
    TimeoutError,
    ModuleNotLoadedError,
    ValueError,
    TypeError,
)
"""What a middleware counts as a failed decision (answered by its fail
policy): every error of redis-py, the network and the deadline, and a
policy that cannot make a request's keys."""


def run_steps(limiter: Any, steps: Steps, deadline: Optional[float] = None) -> Any:
    """Carries out ``steps`` with a RateLimiter; no command starts after
    ``deadline`` (a time.monotonic() instant): DeadlinePassed."""
    try:
        command = next(steps)
        while True:
            check_deadline(deadline)
            if isinstance(command, list):
                command = steps.send(limiter.execute_many(command))
            else:
                command = steps.send(limiter.execute(command))
    except StopIteration as stop:
        return stop.value


async def run_steps_async(limiter: Any, steps: Steps, deadline: Optional[float] = None) -> Any:
    """``run_steps`` with an AsyncRateLimiter."""
    try:
        command = next(steps)
        while True:
            check_deadline(deadline)
            if isinstance(command, list):
                command = steps.send(await limiter.execute_many(command))
            else:
                command = steps.send(await limiter.execute(command))
    except StopIteration as stop:
        return stop.value
