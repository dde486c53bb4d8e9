"""Records the conformance cases' replies from the module and writes
cases.json: `python clients/conformance/record.py` (with the venv of
scripts/deps.sh --test, RL_MODULE naming the module if not built here).
The faked-clock sequences run on Valkey 8.1.8 under libfaketime, the
others too (their replies do not depend on the instant)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from build_cases import build
from harness import CASES, FAKED_SERVER, run_sequence, server


def main() -> None:
    seqs = build()
    with server(FAKED_SERVER, faked=True) as srv:
        for seq in seqs:
            replies = run_sequence(srv, "module", seq)
            for step, reply in zip(seq["steps"], replies):
                step["expect"] = reply
    doc = {
        "about": "redis-ratelimit conformance cases: each sequence starts on an empty database; "
        "`at` is the server's instant (UTC) for the step, `via: other` runs the step on the other backend than the run's, `raw` is a plain "
        "command; `expect` is the module's reply (an error as {\"error\": text}; RL.INSPECT's memory "
        'masked as "*"). Recorded by record.py from the module.',
        "sequences": seqs,
    }
    CASES.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    steps = sum(len(s["steps"]) for s in seqs)
    print(f"{len(seqs)} sequences, {steps} steps written to {CASES}")


if __name__ == "__main__":
    main()
