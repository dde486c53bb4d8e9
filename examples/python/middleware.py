"""A minimal HTTP server that rate limits every request, whatever its path
and method, with one or several limits decided at once by RL.ALLOW.

Standard library only, apart from redis-py; the limits go through
``limits.py`` next to this file. Each request costs one unit of every limit
of the policy (``RL_LIMITS``, below). Allowed requests go on to the
application, limited ones get 429. Every response that the limiter decided
carries exactly these rate limit fields, the binding limit (the one that
decided, or that is closest to deciding) in all but the first:

    RateLimit-Policy: "<name>";q=<limit>;w=<window>, ...   (one item per limit)
    RateLimit: "<name>";r=<remaining>;t=<seconds>
    X-RateLimit-Limit: <limit>
    X-RateLimit-Remaining: <remaining>
    X-RateLimit-Reset: <reset_after>     (seconds from now, not a Unix time)
    Retry-After: <retry_after>           (429 only)

The first two are those of draft-ietf-httpapi-ratelimit-headers (the syntax
of drafts -08 to -11); ``w`` is the policy's window (for THROTTLE the time
its capacity takes to refill, see ``limits.Limit.window``), and ``t`` the
seconds until the limiter is full again, or on a 429 the Retry-After. The
X- names carry the same numbers for the clients that read those.

**Concurrency.** A limit ``name key LEASE limit ttl`` allows at most ``limit``
requests of a key in flight at once. Each request takes a lease named by a
fresh random id, in the same RL.ALLOW as the rate limits (all or nothing),
and gives it back (RL.RELEASE, once) when its response is over: written in
full, failed to write, or abandoned because the client went away (see
``Handler.handle_any``). Its item in RateLimit-Policy is
``"<name>";q=<limit>;qu="concurrent-requests"``, without a window. ``ttl``
is the safety net for a process that dies with requests in flight: their
leases expire by themselves ``ttl`` seconds after they were taken, so it
must be longer than the longest request. A full key answers 429; its
Retry-After is the time until the oldest lease would expire if nobody
released it, an upper bound: a slot comes back as soon as a request ends.

**When Redis fails.** The limiter's answer takes at most ``RL_TIMEOUT_MS``
(250 ms), counted from when the request has arrived, connection attempts
included: the client connects and reads with that timeout and makes no
retries, and the whole call runs against a deadline. A request the limiter
could not decide gets 503 (failing closed, the default), or with
``RL_FAIL_OPEN=yes`` goes to the application without a limit and without
rate limit fields. The log has one line when the limiter starts failing
and one when it answers again, never one per request.

The application behind the limiter is a stand-in: it answers 200, or for a
path /status/<code> that status (to see a failed request given back), or for
/slow/<ms> 200 after that many milliseconds (at most 60000; sooner, without
an answer, when the client goes away), to see requests in flight.

Configuration (environment):
    REDIS_URL        redis://127.0.0.1:6379 (with REDIS_CLUSTER=yes: any node)
    REDIS_CLUSTER    no    yes: a Redis Cluster client; implies RL_GROUP_BY_SLOT
    HOST, PORT       127.0.0.1, 8080
    RL_LIMITS        the policy: `name key ALGORITHM numbers...` entries
                     separated by `;`, the spec as in RL.ALLOW, times in
                     seconds; the key may name $client (the X-Client-Id
                     header, or else the peer address), $ip, $path, $method.
                     `name key LEASE limit ttl` is a concurrency limit.
                     Without it, one limit made of the four below:
    RL_MAX_BURST     9     } RL_POLICY  RL_KEY_PREFIX$client  THROTTLE
    RL_COUNT         10    }     RL_MAX_BURST RL_COUNT RL_PERIOD:
    RL_PERIOD        60    }   10 requests per 60 s, in bursts of up to 10
    RL_KEY_PREFIX    rl:http:
    RL_POLICY        default
    RL_GROUP_BY_SLOT  no (yes with REDIS_CLUSTER): one RL.ALLOW per hash slot,
                     giving back what earlier slots took when one refuses
    RL_REFUND_5XX    no    yes: give the units back when the application
                     answers 5xx
    RL_TIMEOUT_MS    250   the longest the limiter may take to decide
    RL_FAIL_OPEN     no    yes: when the limiter cannot decide, let the
                     request through (no: answer 503)
"""

import os
import secrets
import select
import socket
import sys
import threading
import time
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import redis
from redis.backoff import NoBackoff
from redis.exceptions import RedisClusterException
from redis.retry import Retry

import limits


def flag(name: str, default: str = "no") -> bool:
    value = os.environ.get(name, default).lower()
    if value not in ("yes", "no"):
        raise SystemExit(f"{name} must be yes or no, not {value!r}")
    return value == "yes"


REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379")
REDIS_CLUSTER = flag("REDIS_CLUSTER")
HOST = os.environ.get("HOST", "127.0.0.1")
PORT = int(os.environ.get("PORT", "8080"))
GROUP_BY_SLOT = flag("RL_GROUP_BY_SLOT", "yes" if REDIS_CLUSTER else "no")
REFUND_5XX = flag("RL_REFUND_5XX")
FAIL_OPEN = flag("RL_FAIL_OPEN")


def milliseconds(name: str, default: str) -> float:
    value = os.environ.get(name, default)
    if not value.isdigit() or int(value) == 0:
        raise SystemExit(f"{name} must be a positive number of milliseconds, not {value!r}")
    return int(value) / 1000


TIMEOUT = milliseconds("RL_TIMEOUT_MS", "250")


def policy_from_environment() -> list:
    text = os.environ.get("RL_LIMITS")
    if not text:
        text = "{} {}$client THROTTLE {} {} {}".format(
            os.environ.get("RL_POLICY", "default"),
            os.environ.get("RL_KEY_PREFIX", "rl:http:"),
            os.environ.get("RL_MAX_BURST", "9"),
            os.environ.get("RL_COUNT", "10"),
            os.environ.get("RL_PERIOD", "60"),
        )
    try:
        return limits.parse_limits(text)
    except ValueError as e:
        raise SystemExit(f"RL_LIMITS: {e}")


LIMITS = policy_from_environment()
# The concurrency limits; with one, each request names its lease.
LEASES = [i for i, limit in enumerate(LIMITS) if limit.is_lease]
LEASED = bool(LEASES)

# redis-py keeps a thread-safe connection pool (one per node for a cluster).
# Each connection attempt and each reply is bounded by TIMEOUT, and a failed
# command is not retried: the deadline below is for the whole decision.
CLIENT_OPTIONS = dict(
    socket_connect_timeout=TIMEOUT,
    socket_timeout=TIMEOUT,
    retry=Retry(NoBackoff(), 0),
)
# The errors that mean "the limiter could not decide".
FAILURES = (redis.RedisError, RedisClusterException, OSError, TimeoutError)

if REDIS_CLUSTER:
    # A cluster client asks a node for the slots when it is made. main()
    # makes it at start; when the cluster cannot be reached then, the first
    # request makes it, within its deadline (and the next one, on failure).
    _cluster = None
    _cluster_lock = threading.Lock()

    def connection():
        global _cluster
        with _cluster_lock:
            if _cluster is None:
                _cluster = redis.RedisCluster.from_url(REDIS_URL, **CLIENT_OPTIONS)
            return _cluster
else:
    _client = redis.Redis.from_url(REDIS_URL, **CLIENT_OPTIONS)

    def connection():
        return _client


# The limiter's calls run on these threads, so that a request waits for at
# most its deadline (future.result(timeout)), whatever the client does.
LIMITER = futures.ThreadPoolExecutor(max_workers=32, thread_name_prefix="limiter")


def within_deadline(call, deadline: float):
    """``call(client, deadline)`` on a limiter thread, its result by
    ``deadline`` (time.monotonic()), or TimeoutError."""
    future = LIMITER.submit(lambda: call(connection(), deadline))
    try:
        return future.result(timeout=max(0.0, deadline - time.monotonic()))
    except futures.TimeoutError:
        # Not started yet (all threads busy): it never will be. Started: its
        # commands stop at the deadline (limits.py checks it before each).
        future.cancel()
        raise TimeoutError(f"no answer within {TIMEOUT * 1000:.0f} ms") from None


def release_later(keys: list, indices: list, lease_id: str, report: bool = True) -> None:
    """RL.RELEASE of a request's leases, on a limiter thread that nobody
    waits for: the response never waits for the release. Its commands stop
    at a deadline of its own (RL_TIMEOUT_MS); a release that fails leaves
    its lease to its ttl, and (``report``) is counted and logged like a
    failed decision (one line per outage)."""
    deadline = time.monotonic() + TIMEOUT

    def call() -> None:
        try:
            limits.release(connection(), LIMITS, keys, indices, lease_id, deadline=deadline)
        except FAILURES as e:
            if report:
                HEALTH.failed(e)
        else:
            if report:
                HEALTH.succeeded()

    LIMITER.submit(call)


def log(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


class Health:
    """The limiter's state, for the log: one line when its calls start
    failing, one when they succeed again, however many requests there are
    in between."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.failing_since = None
        self.failures = 0

    def failed(self, error: BaseException) -> None:
        with self.lock:
            self.failures += 1
            if self.failing_since is not None:
                return
            self.failing_since = time.monotonic()
        then = "letting requests through unlimited (RL_FAIL_OPEN=yes)" if FAIL_OPEN else "answering 503"
        log(f"rate limiter unavailable ({type(error).__name__}: {error}); {then} until it answers again")

    def succeeded(self) -> None:
        if self.failing_since is None:  # the common case, without the lock
            return
        with self.lock:
            if self.failing_since is None:
                return
            seconds = time.monotonic() - self.failing_since
            failures, self.failing_since, self.failures = self.failures, None, 0
        log(f"rate limiter available again, after {failures} failed calls in {seconds:.1f} s")


HEALTH = Health()


def sf_string(value: str) -> str:
    """A Structured Field String (RFC 9651): quoted, with \\ and " escaped."""
    if any(ord(c) < 0x20 or ord(c) > 0x7E for c in value):
        raise ValueError(f"not a printable ASCII string: {value!r}")
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


NAMES = [sf_string(limit.name) for limit in LIMITS]


def policy_item(name: str, limit: limits.Limit, f: limits.Fields) -> str:
    """One item of RateLimit-Policy: q requests per w seconds, or for a
    concurrency limit q requests at once (the draft's quota unit
    "concurrent-requests"; no window)."""
    if limit.is_lease:
        return f'{name};q={f.limit};qu="concurrent-requests"'
    return f"{name};q={f.limit};w={limit.window}"


def rate_limit_headers(decision: limits.Decision) -> dict:
    """The rate limit fields of a decision (see the top of this file)."""
    policy = ", ".join(
        policy_item(name, limit, f) for name, limit, f in zip(NAMES, LIMITS, decision.fields)
    )
    f = decision.headline
    # RateLimit's t: no more than r units within t seconds. On a 429 that is
    # the Retry-After (the draft: Retry-After is not earlier than the end of
    # t); otherwise the time until the limiter is full again.
    t = f.retry_after if decision.limited and f.retry_after >= 0 else f.reset_after
    headers = {
        "RateLimit-Policy": policy,
        "RateLimit": f"{NAMES[decision.binding]};r={f.remaining};t={t}",
        "X-RateLimit-Limit": str(f.limit),
        "X-RateLimit-Remaining": str(f.remaining),
        "X-RateLimit-Reset": str(f.reset_after),
    }
    # retry_after is -1 only when the request can never fit (a cost above
    # the capacity); then there is nothing to wait for.
    if decision.limited and f.retry_after >= 0:
        headers["Retry-After"] = str(f.retry_after)
    return headers


def application(method: str, path: str, wait):
    """The stand-in for the service: (status, body), or None when the client
    went away. ``wait(seconds)`` waits, and says False when the client went
    away meanwhile."""
    parts = path.split("/")
    if len(parts) == 3 and parts[1] == "status" and parts[2].isdigit():
        status = int(parts[2])
        if 200 <= status <= 599:
            return status, f"status {status}\n"
    if len(parts) == 3 and parts[1] == "slow" and parts[2].isdigit():
        ms = int(parts[2])
        if ms <= 60000:
            if not wait(ms / 1000):
                return None
            return 200, f"waited {ms} ms\n"
    return 200, "ok\n"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def handle_any(self) -> None:
        # Read and drop any request body, so a kept-alive connection stays in sync.
        length = int(self.headers.get("Content-Length") or 0)
        if length > 0:
            self.rfile.read(length)
        path = self.path.split("?", 1)[0]
        ip = self.client_address[0]
        values = {
            "client": self.headers.get("X-Client-Id") or ip,
            "ip": ip,
            "path": path,
            "method": self.command,
        }
        keys = [limit.render(values) for limit in LIMITS]
        lease_id = secrets.token_hex(16) if LEASED else None
        started = time.monotonic()
        try:
            decision = within_deadline(
                lambda client, deadline: limits.allow(
                    client, LIMITS, keys, group_by_slot=GROUP_BY_SLOT, deadline=deadline,
                    lease_id=lease_id,
                ),
                started + TIMEOUT,
            )
        except FAILURES as e:
            HEALTH.failed(e)
            if LEASED:
                # Redis may still carry out an RL.ALLOW that came too late
                # (it was slow, not gone), and its lease would then hold a
                # slot until its ttl: release it too. Best effort: redis-py
                # sends this on another connection than the late RL.ALLOW,
                # so Redis may run it first; the ttl covers that.
                release_later(keys, LEASES, lease_id, report=False)
            if not FAIL_OPEN:
                self.reply(503, {}, "rate limiter unavailable\n")
                return
            # Fail open: the application answers, unlimited; no rate limit
            # fields, since there are no numbers to put in them.
            self.answer(path, {})
            return
        HEALTH.succeeded()
        headers = rate_limit_headers(decision)
        if decision.limited:
            retry_after = decision.headline.retry_after
            if retry_after >= 0:
                body = f"rate limited: retry in {retry_after} s\n"
            else:
                body = "rate limited: this request exceeds the capacity\n"
            self.reply(429, headers, body)
            return
        leases = [i for i in decision.taken if LIMITS[i].is_lease]
        # The request holds its leases while the application works and its
        # answer is written. The release runs when that is over, whichever
        # way: the answer written in full, the client gone (the application
        # gave up, or writing failed), or the application raised. A
        # synchronous handler cannot see a disconnect while it works; the
        # stand-in's slow path watches the socket itself (``client_waits``).
        try:
            self.answer(path, headers, keys, decision)
        finally:
            if leases:
                release_later(keys, leases, lease_id)

    def answer(self, path: str, headers: dict, keys=None, decision=None) -> None:
        """The application's answer, with ``headers``; with a decision, its
        units given back on a 5xx when RL_REFUND_5XX says so."""
        answered = application(self.command, path, self.client_waits)
        if answered is None:  # the client went away: nobody to answer
            self.close_connection = True
            return
        status, body = answered
        if decision is not None and status >= 500 and REFUND_5XX:
            # The request failed: it should not count. The headers keep the
            # numbers of the decision. The give-back has a deadline of its own.
            try:
                within_deadline(
                    lambda client, deadline: limits.give_back(
                        client, LIMITS, keys, decision.taken, deadline=deadline
                    ),
                    time.monotonic() + TIMEOUT,
                )
            except FAILURES as e:
                HEALTH.failed(e)
        self.reply(status, headers, body)

    def client_waits(self, seconds: float) -> bool:
        """Waits ``seconds``, or less when the client closes the connection
        meanwhile: then False. (A client that went away makes the socket
        readable, and a read there finds the end of the stream.)"""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            readable, _, _ = select.select([self.connection], [], [], left)
            if not readable:
                continue
            try:
                if not self.connection.recv(1, socket.MSG_PEEK):
                    return False
            except OSError:  # reset by the client
                return False
            # The client's next request, pipelined: it is still there.
            time.sleep(max(0.0, end - time.monotonic()))
        return True

    def reply(self, status: int, headers: dict, body: str) -> None:
        data = body.encode()
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    # BaseHTTPRequestHandler calls do_<METHOD> and answers 501 to a method
    # without one; every method, OPTIONS and custom ones included, is a
    # request that costs a unit.
    def __getattr__(self, name: str):
        if name.startswith("do_"):
            return self.handle_any
        raise AttributeError(name)

    # No access log (as in middleware.js): a line per request would bury
    # the limiter's own lines. Errors of the HTTP server itself still go to
    # log_message.
    def log_request(self, code="-", size="-") -> None:
        pass

    def log_message(self, format, *args) -> None:  # noqa: A002 (stdlib signature)
        log(f"{self.address_string()} {format % args}")


def main() -> None:
    try:
        connection()
    except FAILURES:
        pass  # a request tries again, and says so in the log if it fails
    server = ThreadingHTTPServer((HOST, PORT), Handler)
    policy = "; ".join(f"{limit.name} {limit.key} {' '.join(map(str, limit.spec))}" for limit in LIMITS)
    print(
        f"listening on http://{HOST}:{server.server_port} "
        f"({policy}; redis {REDIS_URL}{' cluster' if REDIS_CLUSTER else ''}; "
        f"timeout {TIMEOUT * 1000:.0f} ms, failing {'open' if FAIL_OPEN else 'closed'})",
        flush=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
