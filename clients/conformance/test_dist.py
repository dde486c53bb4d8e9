"""The shipped script is current: clients/lua/dist/ is what clients/lua/src
makes (clients/lua/build.py), and carries no test hook."""

from __future__ import annotations

import json

from harness import ROOT, lua_build


def test_dist_is_what_the_parts_make() -> None:
    stale = lua_build().stale()
    assert stale == [], f"clients/lua/dist/{stale} not current: run `make lua-dist`"


def test_the_shipped_script_has_no_test_hook_and_the_test_variant_has() -> None:
    shipped = (ROOT / "clients" / "lua" / "dist" / "ratelimit.lua").read_text()
    assert "set_clock" not in shipped and "'lib'" not in shipped
    test = lua_build().script(test=True)
    assert "set_clock" in test and "entry == 'lib'" in test


def test_the_manifest_names_every_command_the_scripts_answer() -> None:
    manifest = json.loads((ROOT / "clients" / "lua" / "dist" / "manifest.json").read_text())["commands"]
    assert sorted(manifest) == sorted(
        ["RL.THROTTLE", "RL.SLIDE", "RL.SLICE", "RL.LEASE", "RL.RELEASE", "RL.QUOTA", "RL.ALLOW", "RL.PEEK"]
        + ["RL.REFUND", "RL.INSPECT", "RL.CHARGE", "RL.TOP"]
    )
    for name, entry in manifest.items():
        ro = name in ("RL.PEEK", "RL.INSPECT", "RL.TOP")
        assert entry["readonly"] is ro
        assert entry["prefix"].startswith("#!lua flags=no-writes\n") is ro
        keys = {"RL.ALLOW": "numkeys", "RL.PEEK": "numkeys", "RL.TOP": "none"}.get(name, "first")
        assert entry["keys"] == keys
