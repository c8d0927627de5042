"""A hostile agent in a fleet: it knows where the fleet keeps things (the other repositories,
the worker's workspaces and Temporal's state) and goes for them. Nothing outside its own
preview is read, written or published. The world is outside the system temp folder, which
the sandbox closes whole and would hide what is open elsewhere."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fleet_world import PROGRAM, PROVEN_NODE, PROVEN_PYTHON

from tests.fleet.conftest import Fleet
from wizard.testing.script import call, reply

pytestmark = pytest.mark.live


@pytest.fixture
def outside() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="wizard-hostile-fleet-", dir="/var/tmp"))
    yield base
    shutil.rmtree(base, ignore_errors=True)


STEAL = """import os, shutil
victim, state = "VICTIM", "STATE"
attacks = {
    "read another repository": lambda: open(victim + "/SOURCE.md").read(),
    "list the workspaces": lambda: [os.path.relpath(os.path.join(d, n), state)
                                    for d, ds, fs in os.walk(state + "/fleet") for n in ds + fs],
    "copy Temporal's state": lambda: shutil.copy(state + "/fleet/temporal.db", "stolen.db"),
    "write into another repository": lambda: open(victim + "/PWNED", "w").write("x"),
    "write into the worker's state": lambda: open(state + "/fleet/PWNED", "w").write("x"),
    "arm another repository's git": lambda: open(victim + "/.git/config", "a").write(
        "[core]\\n\\thooksPath = /tmp\\n"),
}
with open("result.txt", "w") as out:
    for name, attack in attacks.items():
        try:
            out.write(f"{name}: done {attack()!r}\\n")
        except OSError as exc:
            out.write(f"{name}: denied ({exc.strerror})\\n")
"""


def test_an_agent_cannot_reach_another_repository_the_workspaces_or_temporal(
    outside: Path, fleet_world: Any
) -> None:
    """The attacker's script runs (its result file is published with its run) and no attack
    in it reaches anything: the sandbox denies or hides it; the victim's run is untouched."""
    victim = outside / "world" / "stripe-checkout-python-1"
    state = outside / "state"
    # The paths are in the script, where the fence does not look: the sandbox must hold.
    steal = STEAL.replace("VICTIM", str(victim)).replace("STATE", str(state))
    hostile = [
        reply(call("write", path="steal.py", content=steal)),
        reply(call("bash", command="python3 steal.py")),
    ]
    fleet: Fleet = fleet_world([PROVEN_NODE, PROVEN_PYTHON], where=outside, first={0: hostile})
    done = fleet.wizard("fleet", "run", PROGRAM, "--repos", str(fleet.world.repos_file),
                        "--publish", "branch", "--max-parallel", "2", "--json")  # fmt: skip
    rows = {row["repo"]: row for row in json.loads(done.stdout)["rows"]}
    assert rows["stripe-checkout-python-1"]["status"] == "proven"  # the victim's own run
    assert rows["stripe-checkout-node-0"]["published"] == "created"
    attacker = fleet.world.repos[0]
    result = subprocess.run(["git", "-C", str(attacker), "show", f"wizard/{PROGRAM}:result.txt"],
                            capture_output=True, text=True, check=True).stdout  # fmt: skip
    said = dict(line.split(": ", 1) for line in result.splitlines())
    assert len(said) == 6, result
    for attack in ("read another repository", "copy Temporal's state",
                   "write into another repository", "arm another repository's git"):  # fmt: skip
        assert said[attack].startswith("denied"), result
    # The state folder is not there for commands: only the folders a preview shows read-only
    # (its own clone's `.git`) stand in an empty skeleton, where a write lands nowhere.
    assert "stripe-checkout-python-1" not in said["list the workspaces"]
    assert "temporal.db" not in said["list the workspaces"]
    assert not list(outside.rglob("PWNED"))
    config = (victim / ".git" / "config").read_text()
    assert "hooksPath" not in config
    assert fleet.workspaces() == []
