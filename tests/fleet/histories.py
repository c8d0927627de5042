"""Histories of real fleets, for the replay test (`test_replay.py`).

With `WIZARD_RECORD_FLEET_HISTORIES` naming a folder, the fleet tests write the history of
each fleet they run (the fleet workflow's and each repository's) into a folder of it named
for the scenario. The histories checked in under `histories/` were recorded so, from the
fleets of `test_workflows.py` and `test_fleet_live.py`:

    WIZARD_RECORD_FLEET_HISTORIES=tests/fleet/histories .venv/bin/pytest tests/fleet

Record again when a scenario is added, never to make a replay pass: a history that no
longer replays is a fleet started by an earlier release that this one cannot finish.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

HISTORIES = Path(__file__).with_name("histories")


async def record(client: Any, fleet_id: str, repos: Iterable[str], scenario: str) -> None:
    """Write the fleet's history and its repositories' (those that started) under the
    scenario's folder, if recording is asked for."""
    from temporalio.service import RPCError

    from wizard.fleet.model import repo_workflow_id

    if not (folder := os.environ.get("WIZARD_RECORD_FLEET_HISTORIES")):
        return
    target = Path(folder) / scenario
    target.mkdir(parents=True, exist_ok=True)
    ids = (repo_workflow_id(fleet_id, repo) for repo in repos)
    for number, workflow_id in enumerate([fleet_id, *ids]):
        with contextlib.suppress(RPCError):  # a repository that never started has none
            history = await client.get_workflow_handle(workflow_id).fetch_history()
            name = "fleet" if number == 0 else f"repo-{workflow_id.rsplit('/', 1)[1]}"
            (target / f"{name}.json").write_text(history.to_json() + "\n")
