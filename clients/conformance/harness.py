"""Servers, clocks and backends for the conformance suite.

A server is started on a free loopback port with the module loaded (or
without it); a faked-clock server runs under libfaketime, whose timestamp
file is rewritten before each step (FAKETIME_NO_CACHE=1), so that `TIME`
and the module's clock show the step's instant to the microsecond. The
backends: "module" (the module's commands), "lua" (the Python package's
lua_backend.execute), "node-lua" (the Node package's executeLua, through
node_driver.js) and "go-lua" (the Go package's Lua backend, through
go_driver/, built into tmp/go/bin by make go-driver). Everything missing (a server, the module, libfaketime,
node, a package) fails loudly with the command that installs it.
"""

from __future__ import annotations

import atexit
import glob
import importlib.util
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import redis
import redis_ratelimit_client
from redis._parsers.base import BaseParser
from redis_ratelimit_client import lua_backend
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
# The Node package as installed from dist/ (scripts/deps.sh --test puts it
# under tmp/node/node_modules); NODE_PATH names another place.
NODE_PATH = os.environ.get("NODE_PATH") or str(ROOT / "tmp" / "node" / "node_modules")
NODE_DRIVER = Path(__file__).resolve().parent / "node_driver.js"
# The Java package's driver runs the jar installed into tmp/m2, with the
# classpath scripts/deps.sh --test writes (java_driver.java).
JAVA_DRIVER = Path(__file__).resolve().parent / "java_driver.java"
JAVA_CLASSPATH = ROOT / "tmp" / "java" / "conformance.classpath"
# The Go package's driver (go_driver/), built by make go-driver.
GO_DRIVER = ROOT / "tmp" / "go" / "bin" / "conformance-driver"
FAKED_SERVER = "tmp/bin/valkey-server-8.1"
# RL_LUA_NO_TIME=1: every server's default user refuses TIME (ACL -time),
# in scripts too (Redis 7 and later run a script with its caller's ACL), so
# that both packages' Lua backends pass the server's clock read from INFO
# server, re-read at every call (the faked clock jumps between steps).
NO_TIME = os.environ.get("RL_LUA_NO_TIME") == "1"
if NO_TIME:
    lua_backend.CLOCK_REREAD_SECONDS = 0.0
SERVERS = ["redis-server", "tmp/bin/valkey-server", "tmp/bin/redis-server-8.2", "tmp/bin/valkey-server-8.1"]


def lua_build() -> Any:
    """clients/lua/build.py, which assembles the scripts from their parts."""
    spec = importlib.util.spec_from_file_location("lua_build", ROOT / "clients" / "lua" / "build.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def lua_test_variant() -> str:
    """The test variant of ratelimit.lua (the `lib` entry, set_clock), built
    from clients/lua/src: the packages ship the other."""
    return str(lua_build().script(test=True))


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


class NodeLua:
    """The Node package's executeLua in a node process (node_driver.js),
    connected to a server's port through `client` (ioredis or node-redis);
    with no port, its zoneOffsets alone. With `argv`, another driver of the
    same protocol (JavaLua)."""

    def __init__(self, port: int | None, client: str = "ioredis", argv: list[str] | None = None) -> None:
        if argv is not None:
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            hello = self._read()
            if not hello.get("ready") or not str(hello.get("package", "")).endswith(".jar"):
                self.close()
                raise RuntimeError(f"{argv[-3]} must run the installed jar, not {hello}")
            return
        node = shutil.which("node")
        if node is None:
            raise RuntimeError("node not found: install Node.js 20+ (scripts/deps.sh --test)")
        if not (Path(NODE_PATH) / "redis-ratelimit" / "package.json").exists():
            raise RuntimeError(
                f"the Node package redis-ratelimit is not installed under {NODE_PATH}: run "
                "scripts/deps.sh --test (make test does; it installs dist/redis-ratelimit-*.tgz), or set NODE_PATH"
            )
        env = dict(os.environ, NODE_PATH=NODE_PATH)
        self.proc = subprocess.Popen(
            [node, str(NODE_DRIVER), "--zones" if port is None else str(port), client],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        hello = self._read()
        package = str(hello.get("package", ""))
        if not hello.get("ready") or package.startswith(str(ROOT / "clients")):
            self.close()
            raise RuntimeError(f"node_driver.js must run the installed package, not {package or hello}")

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"node_driver.js exited ({self.proc.wait()})")
        answer: dict[str, Any] = json.loads(line)
        if "fatal" in answer:
            raise RuntimeError(f"node_driver.js: {answer['fatal']}")
        return answer

    def _ask(self, command: Sequence[Any], now: float | None, clock: str | None = None) -> dict[str, Any]:
        args = [{"hex": a.hex()} if isinstance(a, bytes) else str(a) for a in command]
        request: dict[str, Any] = {"cmd": args}
        if now is not None:
            request["now"] = now
        if clock is not None:
            request["clock"] = clock
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def zones(self, zone: str, now: float) -> str | None:
        """zoneOffsets(zone, now) of the Node package."""
        found = self._ask([zone], now)["zones"]
        return None if found is None else str(found)

    def execute(self, *command: Any, now: float | None = None, clock: str | None = None) -> Any:
        """The reply of executeLua, its strings as bytes; an error reply
        raised as redis-py raises the same reply."""
        answer = self._ask(command, now, clock)
        if "error" in answer:
            raise redis_error(str(answer["error"]))
        return _unhex(answer["reply"])

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class JavaLua(NodeLua):
    """The Java package's Lua backend (RateLimiter.execute of the jar in
    tmp/m2, over Lettuce) through java_driver.java, on the server at `port`.
    One java process serves every server of the session (a JVM's start
    costs seconds, paid once): compiled once into tmp/java/driver, each
    call naming its server's port."""

    _driver: NodeLua | None = None

    def __init__(self, port: int) -> None:
        self.port = port
        self.proc = JavaLua.driver().proc

    @staticmethod
    def driver() -> NodeLua:
        if JavaLua._driver is not None and JavaLua._driver.proc.poll() is None:
            return JavaLua._driver
        java, javac = shutil.which("java"), shutil.which("javac")
        if java is None or javac is None or not JAVA_CLASSPATH.exists():
            raise RuntimeError(f"java, javac or {JAVA_CLASSPATH} is missing: run scripts/deps.sh --test")
        classpath = JAVA_CLASSPATH.read_text().strip()
        classes = ROOT / "tmp" / "java" / "driver"
        compiled = classes / "java_driver.class"
        newest = max(JAVA_DRIVER.stat().st_mtime, JAVA_CLASSPATH.stat().st_mtime)
        if not compiled.exists() or compiled.stat().st_mtime < newest:
            subprocess.run([javac, "-cp", classpath, "-d", str(classes), str(JAVA_DRIVER)], check=True)
        argv = [java, "-XX:TieredStopAtLevel=1", "-cp", f"{classes}:{classpath}", "java_driver", "-", "lua"]
        JavaLua._driver = NodeLua(None, argv=argv)
        atexit.register(JavaLua._driver.close)
        return JavaLua._driver

    def _ask(self, command: Sequence[Any], now: float | None, clock: str | None = None) -> dict[str, Any]:
        args = [{"hex": a.hex()} if isinstance(a, bytes) else str(a) for a in command]
        request: dict[str, Any] = {"cmd": args, "port": self.port}
        if now is not None:
            request["now"] = now
        if clock is not None:
            request["clock"] = clock
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        """This server is stopping: the driver drops its connection (the process stays)."""
        if self.proc.poll() is None and self.proc.stdin is not None:
            self.proc.stdin.write(json.dumps({"close": self.port}) + "\n")
            self.proc.stdin.flush()
            self._read()


class GoLua(NodeLua):
    """The Go package's Lua backend (Limiter.Do with BackendLua, over
    go-redis) in a go process (go_driver/main.go)."""

    def __init__(self, port: int) -> None:
        if not GO_DRIVER.exists():
            raise RuntimeError(f"{GO_DRIVER} is missing: run make go-driver (after make go-setup)")
        self.proc = subprocess.Popen(
            [str(GO_DRIVER), str(port)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        hello = self._read()
        if not hello.get("ready") or "clients/go" not in str(hello.get("package", "")):
            self.close()
            raise RuntimeError(f"the Go driver must run the Go package, not {hello}")


def _unhex(reply: Any) -> Any:
    if isinstance(reply, dict):
        return bytes.fromhex(reply["hex"])
    if isinstance(reply, list):
        return [_unhex(r) for r in reply]
    return reply


def redis_error(text: str) -> redis.ResponseError:
    """The exception redis-py raises for the error reply `text` (its own
    parser: the module's `ERR ...` without `ERR `, `WRONGTYPE ...` whole)."""
    parse: Callable[[str], Any] = BaseParser.parse_error
    error = parse(text)
    assert isinstance(error, redis.ResponseError), text
    return error


class Server:
    def __init__(self, binary: str, faked: bool, module: bool = True) -> None:
        self.binary = server_path(binary)
        self.dir = tempfile.mkdtemp(prefix="rl-conformance-")
        self.clock_file = os.path.join(self.dir, "clock")
        self._node: NodeLua | None = None
        self._java: JavaLua | None = None
        self._go: GoLua | None = None
        env = dict(os.environ)
        if faked:
            self.set_clock("2026-01-01 00:00:00.000000")
            env.update(
                LD_PRELOAD=faketime_lib(),
                FAKETIME_TIMESTAMP_FILE=self.clock_file,
                FAKETIME_NO_CACHE="1",
                TZ="UTC",
            )
        # A free port can be taken by another process before the server
        # binds it: then another server may answer the ping, so the reply
        # of INFO must name this process, else the next port is tried.
        for _ in range(5):
            self.port = free_port()
            self.proc = subprocess.Popen(
                self._args(module), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            self.client = redis.Redis(port=self.port, protocol=2)
            if self._started():
                if NO_TIME:
                    acl: Callable[..., Any] = self.client.execute_command
                    acl("ACL", "SETUSER", "default", "-time")
                return
            self.proc.kill()
            self.proc.wait()
        self.stop()
        raise RuntimeError(f"{binary} did not start on a free port (last tried {self.port})")

    def _args(self, module: bool) -> list[str]:
        return [
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
            *(["--loadmodule", module_path()] if module else []),
        ]

    def _started(self) -> bool:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                info = self.client.info("server")
            except redis.ConnectionError:
                time.sleep(0.05)
                continue
            return int(info.get("process_id", -1)) == self.proc.pid
        return False

    def set_clock(self, at: str) -> None:
        with open(self.clock_file, "w") as f:
            f.write(at + "\n")

    def node(self) -> NodeLua:
        """The Node package's Lua backend on this server (started once)."""
        if self._node is None:
            self._node = NodeLua(self.port)
        return self._node

    def java(self) -> JavaLua:
        """The Java package's Lua backend on this server (started once)."""
        if self._java is None:
            self._java = JavaLua(self.port)
        return self._java

    def go(self) -> GoLua:
        """The Go package's Lua backend on this server (started once)."""
        if self._go is None:
            self._go = GoLua(self.port)
        return self._go

    def stop(self) -> None:
        if self._go is not None:
            self._go.close()
        if self._java is not None:
            self._java.close()
        if self._node is not None:
            self._node.close()
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
    if step.get("raw"):
        via = "module"
    now = unix_seconds(step["at"]) if "at" in step else None
    try:
        reply = send(srv, via, cmd, now)
    except redis.ResponseError as e:
        return {"error": str(e)}
    return normalize(reply)


def send(srv: Server, backend: str, cmd: list[Any], now: float | None) -> Any:
    """One command line through a backend: "module" (the server as is),
    "node-lua" (the Node package's executeLua) or "lua" (the Python
    package's execute); ``now`` is the client's clock for the calendar."""
    if backend == "module":
        run: Callable[..., Any] = srv.client.execute_command
        return run(*cmd)
    if backend == "node-lua":
        return srv.node().execute(*cmd, now=now)
    if backend == "java-lua":
        return srv.java().execute(*cmd, now=now)
    if backend == "go-lua":
        return srv.go().execute(*cmd, now=now)
    return execute(srv.client, *cmd, lua_dir=LUA_DIR, now=now)


def run_sequence(srv: Server, backend: str, seq: dict[str, Any]) -> list[Any]:
    srv.client.flushall()
    return [run_step(srv, backend, step) for step in seq["steps"]]
