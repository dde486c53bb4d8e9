"""Servers, clocks and backends for the conformance suite.

A server is started on a free loopback port with the module loaded; a
faked-clock server runs under libfaketime, whose timestamp file is
rewritten before each step (FAKETIME_NO_CACHE=1), so that `TIME` and the
module's clock show the step's instant to the microsecond. Everything
missing (a server, the module, libfaketime, a package) fails loudly with
the command that installs it.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import redis
import redis_ratelimit_client
from redis_ratelimit_client.lua_backend import execute

ROOT = Path(__file__).resolve().parents[2]
CASES = Path(__file__).resolve().parent / "cases.json"
# The scripts the installed package embeds (from clients/lua/ at build);
# REDIS_RATELIMIT_LUA_DIR points at another directory of them.
LUA_DIR: str | None = os.environ.get("REDIS_RATELIMIT_LUA_DIR") or None

# The suite runs against the package installed from dist/, never the source tree.
if "site-packages" not in (redis_ratelimit_client.__file__ or ""):
    raise RuntimeError(
        f"redis_ratelimit_client comes from {redis_ratelimit_client.__file__}, not an installed "
        "wheel: run it with tmp/python-client/venv (make test installs the wheel of dist/)"
    )
FAKED_SERVER = "tmp/bin/valkey-server-8.1"
SERVERS = ["redis-server", "tmp/bin/valkey-server", "tmp/bin/redis-server-8.2", "tmp/bin/valkey-server-8.1"]


def module_path() -> str:
    so = os.environ.get("RL_MODULE") or str(ROOT / "target" / "release" / "libredis_ratelimit.so")
    if not Path(so).exists():
        raise RuntimeError(f"module not found at {so}: run `cargo build --release` (or set RL_MODULE)")
    return so


def server_path(name: str) -> str:
    path = shutil.which(name) if "/" not in name else str(ROOT / name)
    if path is None or not Path(path).exists():
        raise RuntimeError(f"server {name} not found: run scripts/deps.sh --test")
    return path


def faketime_lib() -> str:
    libs = glob.glob("/usr/lib/*/faketime/libfaketime.so.1")
    if not libs:
        raise RuntimeError("libfaketime not found: run scripts/deps.sh --test (Debian package faketime)")
    return libs[0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, binary: str, faked: bool, module: bool = True) -> None:
        self.binary = server_path(binary)
        self.dir = tempfile.mkdtemp(prefix="rl-conformance-")
        self.clock_file = os.path.join(self.dir, "clock")
        self.port = free_port()
        env = dict(os.environ)
        if faked:
            self.set_clock("2026-01-01 00:00:00.000000")
            env.update(
                LD_PRELOAD=faketime_lib(),
                FAKETIME_TIMESTAMP_FILE=self.clock_file,
                FAKETIME_NO_CACHE="1",
                TZ="UTC",
            )
        args = [
            self.binary,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            self.dir,
            "--loadmodule",
            module_path(),
        ]
        self.proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.client = redis.Redis(port=self.port, protocol=2)
        deadline = time.monotonic() + 10
        while True:
            try:
                self.client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    self.stop()
                    raise RuntimeError(f"{binary} did not start on port {self.port}")
                time.sleep(0.05)

    def set_clock(self, at: str) -> None:
        with open(self.clock_file, "w") as f:
            f.write(at + "\n")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


@contextmanager
def server(binary: str, faked: bool, module: bool = True) -> Iterator[Server]:
    s = Server(binary, faked, module)
    try:
        yield s
    finally:
        s.stop()


def unix_seconds(at: str) -> float:
    t = datetime.strptime(at, "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC)
    return t.timestamp()


def normalize(reply: Any) -> Any:
    """A reply as JSON: bytes as text, RL.INSPECT's `memory` masked (it is
    the server's figure for the key, which differs between backends)."""
    if isinstance(reply, bytes):
        return reply.decode("utf-8", "backslashreplace")
    if isinstance(reply, list):
        out = [normalize(r) for r in reply]
        for i in range(len(out) - 1):
            if out[i] == "memory" and isinstance(out[i + 1], int) and i == 4:
                out[i + 1] = "*"
        return out
    return reply


def run_step(srv: Server, backend: str, step: dict[str, Any]) -> Any:
    if "at" in step:
        srv.set_clock(step["at"])
    cmd = step["cmd"]
    via = backend
    if step.get("via") == "other":
        via = "lua" if backend == "module" else "module"
    try:
        if step.get("raw") or via == "module":
            run: Callable[..., Any] = srv.client.execute_command
            reply = run(*cmd)
        else:
            now = unix_seconds(step["at"]) if "at" in step else None
            reply = execute(srv.client, *cmd, lua_dir=LUA_DIR, now=now)
    except redis.ResponseError as e:
        return {"error": str(e)}
    return normalize(reply)


def run_sequence(srv: Server, backend: str, seq: dict[str, Any]) -> list[Any]:
    srv.client.flushall()
    return [run_step(srv, backend, step) for step in seq["steps"]]
