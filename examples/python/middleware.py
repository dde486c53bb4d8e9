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

The application behind the limiter is a stand-in: it answers 200, or for a
path /status/<code> that status (to see a failed request given back).

Configuration (environment):
    REDIS_URL        redis://127.0.0.1:6379 (with REDIS_CLUSTER=yes: any node)
    REDIS_CLUSTER    no    yes: a Redis Cluster client; implies RL_GROUP_BY_SLOT
    HOST, PORT       127.0.0.1, 8080
    RL_LIMITS        the policy: `name key ALGORITHM numbers...` entries
                     separated by `;`, the spec as in RL.ALLOW, times in
                     seconds; the key may name $client (the X-Client-Id
                     header, or else the peer address), $ip, $path, $method.
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
"""

import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import redis

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

# redis-py keeps a thread-safe connection pool (one per node for a cluster).
if REDIS_CLUSTER:
    client = redis.RedisCluster.from_url(REDIS_URL)
else:
    client = redis.Redis.from_url(REDIS_URL)


def sf_string(value: str) -> str:
    """A Structured Field String (RFC 9651): quoted, with \\ and " escaped."""
    if any(ord(c) < 0x20 or ord(c) > 0x7E for c in value):
        raise ValueError(f"not a printable ASCII string: {value!r}")
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


NAMES = [sf_string(limit.name) for limit in LIMITS]


def rate_limit_headers(decision: limits.Decision) -> dict:
    """The rate limit fields of a decision (see the top of this file)."""
    policy = ", ".join(
        f"{name};q={f.limit};w={limit.window}"
        for name, limit, f in zip(NAMES, LIMITS, decision.fields)
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


def application(method: str, path: str):
    """The stand-in for the service: (status, body)."""
    parts = path.split("/")
    if len(parts) == 3 and parts[1] == "status" and parts[2].isdigit():
        status = int(parts[2])
        if 200 <= status <= 599:
            return status, f"status {status}\n"
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
        try:
            decision = limits.allow(client, LIMITS, keys, group_by_slot=GROUP_BY_SLOT)
        except redis.RedisError as e:
            # Fail closed; a real service might rather fail open.
            self.reply(503, {}, f"rate limiter unavailable: {e}\n")
            return
        headers = rate_limit_headers(decision)
        if decision.limited:
            retry_after = decision.headline.retry_after
            if retry_after >= 0:
                body = f"rate limited: retry in {retry_after} s\n"
            else:
                body = "rate limited: this request exceeds the capacity\n"
            self.reply(429, headers, body)
            return
        status, body = application(self.command, path)
        if status >= 500 and REFUND_5XX:
            # The request failed: it should not count. The headers keep the
            # numbers of the decision.
            try:
                limits.give_back(client, LIMITS, keys, decision.taken)
            except redis.RedisError as e:
                self.log_message("could not give the units back: %s", e)
        self.reply(status, headers, body)

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

    def log_message(self, format, *args) -> None:  # noqa: A002 (stdlib signature)
        sys.stderr.write(f"{self.address_string()} {format % args}\n")


def main() -> None:
    server = ThreadingHTTPServer((HOST, PORT), Handler)
    policy = "; ".join(f"{limit.name} {limit.key} {' '.join(map(str, limit.spec))}" for limit in LIMITS)
    print(
        f"listening on http://{HOST}:{server.server_port} "
        f"({policy}; redis {REDIS_URL}{' cluster' if REDIS_CLUSTER else ''})",
        flush=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
