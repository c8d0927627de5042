"""End-to-end runs of the `wizard` command, on the real pi engine and scripted gateways."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from wizard.engines import bundle as engine
from wizard.runner.harness.pi.early import HOST_SCRIPT
from wizard.testing.cli import wizard_env
from wizard.testing.contract import assert_valid_line

__all__ = ["ci_lines", "gateway_process", "pi_processes_in", "wizard_env"]


@pytest.fixture(autouse=True)
def _needs_pi() -> None:
    if engine.installed_bundle() is None:
        if os.environ.get("CI"):
            pytest.fail("pi is not installed; .ci/run must run `wizard engines install pi`")
        pytest.skip("pi is not installed (wizard engines install pi)")


def ci_lines(stdout: str) -> list[dict[str, Any]]:
    """The `--ci` lines of a run, each checked against the events schema."""
    lines = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    for line in lines:
        assert_valid_line(line)
    return lines


def pi_processes_in(directory: Path) -> list[int]:
    """pi processes (wizard's pi host) whose working directory is `directory`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if HOST_SCRIPT.name.encode() in cmdline and Path(cwd) == directory.resolve():
            found.append(int(entry.name))
    return found


@pytest.fixture
def gateway_process(tmp_path: Path) -> Iterator[Any]:
    """Start `python -m wizard.testing.gateway` with a scenario; yields a starter."""
    started: list[subprocess.Popen[str]] = []

    def start(scenario: dict[str, Any]) -> tuple[str, Path]:
        scenario_file = tmp_path / f"scenario-{len(started)}.json"
        scenario_file.write_text(json.dumps(scenario))
        log = tmp_path / f"gateway-{len(started)}.jsonl"
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "wizard.testing.gateway",
                "--scenario",
                str(scenario_file),
                "--log",
                str(log),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        started.append(proc)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("READY "), line
        return line.split()[1], log

    yield start
    for proc in started:
        proc.terminate()
        proc.wait(timeout=10)
