"""A fleet's live test world: corpus apps as local git repositories, a scripted gateway
process answering all their runs, and wizard's environment with its own state folder (so
its own embedded Temporal server, stopped after the test)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from wizard.testing.cli import wizard_env

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from fleet_world import World, build_world, fleet_env  # noqa: E402

CORPUS = ROOT / "tests" / "corpus"


@dataclass
class Fleet:
    """One test's fleet world: its repositories, gateway log and environment."""

    world: World
    env: dict[str, str]
    gateway_log: Path
    state: Path

    def wizard(self, *args: str, env: dict[str, str] | None = None,
               timeout: float = 300) -> subprocess.CompletedProcess[str]:  # fmt: skip
        """`wizard ARGS` in this world."""
        return subprocess.run([sys.executable, "-m", "wizard", *args], capture_output=True,
                              text=True, env=env or self.env, timeout=timeout)  # fmt: skip

    def requests(self) -> list[dict[str, Any]]:
        """What the gateway has answered so far."""
        lines = self.gateway_log.read_text().splitlines() if self.gateway_log.exists() else []
        return [json.loads(line) for line in lines]

    def workspaces(self, state: Path | None = None) -> list[Path]:
        """What a worker's runs left in its state folder: workspaces, and their projects'
        journals, previews and locks."""
        state = state or self.state
        left = [state / "fleet" / "workspaces", state / "journal", state / "locks"]
        return sorted(p for folder in left if folder.exists() for p in folder.rglob("*"))


@pytest.fixture
def fleet_world(tmp_path: Path) -> Iterator[Any]:
    """A starter: `fleet_world(cases)` builds the repositories and starts the gateway."""
    gateways: list[subprocess.Popen[str]] = []
    states: list[Path] = []

    def start(cases: list[tuple[str, str]], where: Path | None = None,
              first: dict[int, list[dict[str, Any]]] | None = None) -> Fleet:  # fmt: skip
        base = where or tmp_path
        world = build_world(CORPUS, base / "world", cases, first)
        scenario = tmp_path / "scenario.json"
        scenario.write_text(json.dumps(world.scenario))
        log = tmp_path / "gateway.jsonl"
        gateway = subprocess.Popen(
            [sys.executable, "-m", "wizard.testing.gateway", "--scenario", str(scenario),
             "--log", str(log)], stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        gateways.append(gateway)
        assert gateway.stdout is not None
        ready = gateway.stdout.readline()
        assert ready.startswith("READY "), ready
        state = base / "state"
        states.append(state)
        env = fleet_env(wizard_env(tmp_path, WIZARD_STATE_DIR=str(state)), ready.split()[1])
        return Fleet(world, env, log, state)

    yield start
    from wizard.fleet.server import stop_server

    for state in states:
        stop_server(state / "fleet")
    for gateway in gateways:
        gateway.terminate()
        gateway.wait(timeout=10)
