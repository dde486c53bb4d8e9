"""The redis-server the benchmark starts, on a free 127.0.0.1 port."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time

from .regimes import BenchError
from .resp import Client, ReplyError, encode

def find_binary(env: str, default: str) -> str:
    name = os.environ.get(env, default)
    path = shutil.which(name)
    if not path:
        raise BenchError(
            "%s not found (set $%s or install it; on Debian: apt-get install redis-server redis-tools)"
            % (name, env)
        )
    return path


def pinning() -> tuple:
    """The command prefixes that pin the server to the first usable core
    and redis-benchmark to the second (`taskset`), so that the client never
    takes the server's core and neither moves between cores; empty ones
    when fewer than two cores are usable or taskset is missing."""
    try:
        cores = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = []
    if len(cores) < 2 or not shutil.which("taskset"):
        return [], []
    return ["taskset", "-c", str(cores[0])], ["taskset", "-c", str(cores[1])]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, binary: str, modules, workdir: str, wrapper=(), start_timeout_s: float = 10, extra=()):
        """`wrapper`: a command line the server runs under (valgrind's);
        `extra`: more of the server's options."""
        self.binary, self.modules, self.workdir = binary, modules, workdir
        self.extra = list(extra)
        self.wrapper, self.start_timeout_s = list(wrapper), start_timeout_s
        self.proc = None
        self.port = None

    def start(self):
        for attempt in range(3):
            self.port = free_port()
            log = os.path.join(self.workdir, "redis-%d.log" % self.port)
            cmd = self.wrapper + [
                self.binary,
                "--port", str(self.port),
                "--bind", "127.0.0.1",
                "--save", "",
                "--appendonly", "no",
                "--dir", self.workdir,
                "--logfile", log,
            ] + self.extra
            for so in self.modules:
                cmd += ["--loadmodule", so]
            # A wrapper's own messages (valgrind's) go to a file beside the log.
            stderr = open(log + ".stderr", "w") if self.wrapper else None
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr)
            if stderr:
                stderr.close()
            deadline = time.monotonic() + self.start_timeout_s
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    break
                try:
                    c = Client(self.port, timeout=2)
                    try:
                        if c.call("PING") == "PONG":
                            return c
                    finally:
                        c.close()
                except (OSError, ReplyError, ConnectionError):
                    time.sleep(0.05)
            tail = ""
            try:
                with open(log) as f:
                    tail = "".join(f.readlines()[-15:])
            except OSError:
                pass
            self.stop()
            if attempt == 2:
                raise BenchError("redis-server did not start:\n" + tail)

    def stop(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                c = Client(self.port, timeout=2)
                c.sock.sendall(encode(["SHUTDOWN", "NOSAVE"]))
                c.close()
                self.proc.wait(timeout=30 if self.wrapper else 5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None



def has_command(con: Client, name: str) -> bool:
    """Whether the server (its loaded modules included) has the command:
    COMMAND INFO answers a nil element for a name it does not know."""
    reply = con.call("COMMAND", "INFO", name)
    return bool(reply) and reply[0] is not None
