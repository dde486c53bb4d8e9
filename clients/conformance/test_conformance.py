"""The conformance suite: every case of cases.json, on the module and on
the Lua backend (the Python package's lua_backend.execute, and the Node
package's executeLua: "node-lua"; the Java package's RateLimiter.execute:
"java-lua"; the Go package's: "go-lua"), must give the recorded reply.
Faked-clock sequences run on Valkey 8.1.8 under libfaketime; the others,
whose replies do not depend on the instant, on every server of the
matrix."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from harness import CASES, FAKED_SERVER, SERVERS, run_sequence, server

DOC = json.loads(CASES.read_text())
SEQS: list[dict[str, Any]] = DOC["sequences"]


def check(srv: Any, backend: str, seqs: list[dict[str, Any]], faked: bool = True) -> int:
    diffs = []
    steps = 0
    for seq in seqs:
        got = run_sequence(srv, backend, seq)
        for i, (step, reply) in enumerate(zip(seq["steps"], got)):
            if step.get("timed") and not faked:
                continue
            steps += 1
            if reply != step["expect"]:
                diffs.append(f"{seq['name']} step {i} {step['cmd']}: expected {step['expect']!r}, got {reply!r}")
    assert not diffs, f"{len(diffs)} of {steps} steps differ on {backend}:\n" + "\n".join(diffs[:40])
    return steps


BACKENDS = ["module", "lua", "node-lua", "java-lua", "go-lua"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_case_on_a_faked_clock(backend: str) -> None:
    with server(FAKED_SERVER, faked=True) as srv:
        assert check(srv, backend, SEQS) > 400


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("binary", SERVERS)
def test_instant_free_cases_on_every_server(binary: str, backend: str) -> None:
    seqs = [s for s in SEQS if s["clock"] == "real"]
    with server(binary, faked=False) as srv:
        assert check(srv, backend, seqs, faked=False) > 100


@pytest.mark.parametrize("backend", ["lua", "node-lua", "java-lua", "go-lua"])
@pytest.mark.parametrize(("binary", "faked"), [(FAKED_SERVER, True), ("redis-server", False)])
def test_the_lua_backend_on_servers_without_the_module(binary: str, faked: bool, backend: str) -> None:
    # Sequences without keys of the other backend, where the module is absent.
    seqs = [s for s in SEQS if not any("via" in step for step in s["steps"]) and (faked or s["clock"] == "real")]
    with server(binary, faked=faked, module=False) as srv:
        run: Callable[..., Any] = srv.client.execute_command
        assert run("MODULE", "LIST") == []
        assert check(srv, backend, seqs, faked=faked) > 100
