"""Servers for the tests: a real redis-server (``$REDIS_SERVER``, default
``redis-server``) with the module (``$RL_MODULE``, default the repository's
target/release/libredis_ratelimit.so) on a free 127.0.0.1 port, started and
stopped by fixtures. A missing server or module fails loudly, saying what to
run; nothing is skipped."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterator, List, Optional

import pytest
import redis

ROOT = Path(__file__).resolve().parents[3]
SETUP = "run `make test` (or `scripts/deps.sh --test`) from the repository root"


def module_path() -> str:
    path = os.environ.get("RL_MODULE") or str(ROOT / "target/release/libredis_ratelimit.so")
    if not Path(path).exists():
        pytest.fail(
            f"the module is missing at {path}: run `cargo build --release` in {ROOT} "
            "(or set RL_MODULE to a built libredis_ratelimit.so)",
            pytrace=False,
        )
    return path


def server_binary() -> str:
    binary = os.environ.get("REDIS_SERVER", "redis-server")
    if shutil.which(binary) is None:
        pytest.fail(f"the server {binary!r} ($REDIS_SERVER) is missing: {SETUP}", pytrace=False)
    return binary


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """One server process; ``module`` False starts it without the module."""

    def __init__(self, module: bool = True, extra: Optional[List[str]] = None) -> None:
        self.dir = tempfile.mkdtemp(prefix="rl-py-")
        self.module = module
        self.extra = extra or []
        self.proc: Optional[subprocess.Popen[bytes]] = None
        self.port = 0
        self.start()

    def start(self, port: Optional[int] = None) -> None:
        for _ in range(5):
            self.port = port or free_port()
            args = [server_binary(), "--port", str(self.port), "--bind", "127.0.0.1",
                    "--save", "", "--appendonly", "no", "--dir", self.dir,
                    "--logfile", os.path.join(self.dir, "server.log"), *self.extra]
            if self.module:
                args += ["--loadmodule", module_path()]
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if self._ready():
                return
            self.kill()
        log = Path(self.dir, "server.log")
        pytest.fail(f"the server did not start: {log.read_text() if log.exists() else ''}")

    def _ready(self) -> bool:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                return False
            try:
                redis.Redis(port=self.port, socket_timeout=1).ping()
                return True
            except redis.RedisError:
                time.sleep(0.02)
        return False

    def client(self, **options: object) -> redis.Redis:
        return redis.Redis(port=self.port, **options)  # type: ignore[arg-type]

    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
            self.proc.wait(10)

    def signal(self, sig: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    def close(self) -> None:
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    s = Server()
    yield s
    s.close()


@pytest.fixture
def r(server: Server) -> Iterator[redis.Redis]:
    client = server.client()
    client.flushall()
    yield client
    client.close()


class Cluster:
    """Three masters on loopback, no replicas: slots in three ranges;
    ``module`` False starts them without the module (the Lua backend)."""

    def __init__(self, module: bool = True) -> None:
        self.module = module
        self.nodes = [Server(module=module,
                             extra=["--cluster-enabled", "yes", "--cluster-config-file",
                                    "nodes.conf", "--cluster-node-timeout", "2000"])
                      for _ in range(3)]
        ranges = [(0, 5460), (5461, 10922), (10923, 16383)]
        for node, (a, b) in zip(self.nodes, ranges):
            node.client().execute_command("CLUSTER", "ADDSLOTSRANGE", a, b)
        for node in self.nodes[1:]:
            self.nodes[0].client().execute_command("CLUSTER", "MEET", "127.0.0.1", node.port)
        deadline = time.monotonic() + 30
        while True:
            states = [n.client().execute_command("CLUSTER", "INFO") for n in self.nodes]
            text = [s.decode() if isinstance(s, bytes) else str(s) for s in states]
            if all("cluster_state:ok" in t and "cluster_known_nodes:3" in t for t in text):
                break
            if time.monotonic() > deadline:
                pytest.fail(f"the cluster did not settle: {text}")
            time.sleep(0.1)

    def close(self) -> None:
        for n in self.nodes:
            n.close()


@pytest.fixture(scope="session", params=["module", "lua"])
def cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """A cluster with the module loaded, then one without it, where the
    clients answer through the Lua backend's scripts."""
    c = Cluster(module=request.param == "module")
    yield c
    c.close()


def release_calls(client: redis.Redis) -> int:
    """How many RL.RELEASE calls the server has run (INFO commandstats)."""
    stats = client.info("commandstats")
    return sum(int(v["calls"]) for k, v in stats.items() if k.lower() == "cmdstat_rl.release")
