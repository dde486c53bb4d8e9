"""A minimal HTTP server that rate limits every request, whatever its path
and method, with RL.THROTTLE.

Standard library only, apart from redis-py. Each request costs one unit of
the caller's limiter, ``RL.THROTTLE <prefix><client> <max_burst> <count>
<period>``, where the client is the ``X-Client-Id`` header or else the peer
address. Allowed requests get 200, limited ones 429 with ``Retry-After``.
Every response carries the rate limit fields of
draft-ietf-httpapi-ratelimit-headers-10 (the syntax of drafts -08 to -10):

    RateLimit-Policy: "default";q=<limit>;w=<period>
    RateLimit: "default";r=<remaining>;t=<reset_after>

Configuration (environment):
    REDIS_URL      redis://127.0.0.1:6379
    HOST, PORT     127.0.0.1, 8080
    RL_MAX_BURST   9     } 10 requests per 60 s, in bursts of up to 10
    RL_COUNT       10    }  (capacity = max_burst + 1)
    RL_PERIOD      60    }
    RL_KEY_PREFIX  rl:http:
    RL_POLICY      default   (the policy name in both fields)
"""

import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import redis

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379")
HOST = os.environ.get("HOST", "127.0.0.1")
PORT = int(os.environ.get("PORT", "8080"))
MAX_BURST = int(os.environ.get("RL_MAX_BURST", "9"))
COUNT = int(os.environ.get("RL_COUNT", "10"))
PERIOD = int(os.environ.get("RL_PERIOD", "60"))
KEY_PREFIX = os.environ.get("RL_KEY_PREFIX", "rl:http:")
POLICY = os.environ.get("RL_POLICY", "default")

# redis-py keeps a thread-safe connection pool.
client = redis.Redis.from_url(REDIS_URL)


def sf_string(value: str) -> str:
    """A Structured Field String (RFC 9651): quoted, with \\ and " escaped."""
    if any(ord(c) < 0x20 or ord(c) > 0x7E for c in value):
        raise ValueError(f"not a printable ASCII string: {value!r}")
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def throttle(client_id: str):
    """The five fields of RL.THROTTLE for one request of this client."""
    reply = client.execute_command(
        "RL.THROTTLE", KEY_PREFIX + client_id, MAX_BURST, COUNT, PERIOD
    )
    limited, limit, remaining, retry_after, reset_after = (int(v) for v in reply)
    return limited, limit, remaining, retry_after, reset_after


def rate_limit_headers(limit: int, remaining: int, reset_after: int) -> dict:
    name = sf_string(POLICY)
    return {
        "RateLimit-Policy": f"{name};q={limit};w={PERIOD}",
        "RateLimit": f"{name};r={remaining};t={reset_after}",
    }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def handle_any(self) -> None:
        # Read and drop any request body, so a kept-alive connection stays in sync.
        length = int(self.headers.get("Content-Length") or 0)
        if length > 0:
            self.rfile.read(length)
        client_id = self.headers.get("X-Client-Id") or self.client_address[0]
        try:
            limited, limit, remaining, retry_after, reset_after = throttle(client_id)
        except redis.RedisError as e:
            # Fail closed; a real service might rather fail open.
            self.reply(503, {}, f"rate limiter unavailable: {e}\n")
            return
        headers = rate_limit_headers(limit, remaining, reset_after)
        if not limited:
            self.reply(200, headers, "ok\n")
            return
        # retry_after is -1 only when the request can never fit (a cost above
        # the capacity); then there is nothing to wait for.
        if retry_after >= 0:
            headers["Retry-After"] = str(retry_after)
            body = f"rate limited: retry in {retry_after} s\n"
        else:
            body = "rate limited: this request exceeds the capacity\n"
        self.reply(429, headers, body)

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
    print(
        f"listening on http://{HOST}:{server.server_port} "
        f"({COUNT} per {PERIOD} s, burst {MAX_BURST}, redis {REDIS_URL})",
        flush=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
