"""Which command lines start pi's host with the process (`runner.harness.pi.early`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from wizard.runner.harness.pi.early import runs_pi


@pytest.mark.parametrize(
    ("argv", "environ", "expected"),
    [
        (["run", "revenue-analytics", "--project", "app"], {}, ("run", "revenue-analytics")),
        (["run", "--ci", "transactional-email"], {}, ("run", "transactional-email")),
        (["skill", "posthog-email"], {}, ("skill", "posthog-email")),
        (["demo", "--scenario", "skill-abort"], {}, ("demo", "skill-abort")),
        (["demo"], {}, ("demo", "")),
        (["run", "x", "--harness", "pi"], {"WIZARD_HARNESS": "anthropic"}, ("run", "x")),
        (["run", "x", "--harness", "anthropic"], {}, None),
        (["run", "x", "--harness=anthropic"], {}, None),
        (["run", "x"], {"WIZARD_HARNESS": "anthropic"}, None),
        (["run", "x", "--help"], {}, None),
        (["--version"], {}, None),
        (["run"], {}, None),
        (["runs"], {}, None),
        (["fleet", "run", "x"], {}, None),
        ([], {}, None),
    ],
)
def test_only_a_pi_run_starts_pi_early(
    argv: list[str], environ: dict[str, str], expected: tuple[str, str] | None
) -> None:
    assert runs_pi(argv, environ) == expected


def test_a_run_on_another_harness_ends_the_host_started_early(tmp_path: Path) -> None:
    """`make_harness` for another harness ends pi's early host at once (not at exit, where
    the run's sweep of leftover processes would count it as the agent's), and its folders."""
    from wizard.runner.harness import registry
    from wizard.runner.harness.pi import early

    folders = (tmp_path / "agent", tmp_path / "temp")
    for folder in folders:
        folder.mkdir()
    host = subprocess.Popen(["sleep", "60"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    early._process, early._folders = host, folders
    registry.make_harness("anthropic")
    assert host.wait(timeout=5) != 0
    assert early._process is None
    assert not any(folder.exists() for folder in folders)


def test_a_ctrl_c_while_the_early_host_checks_ends_it_and_removes_its_folders(
    tmp_path: Path,
) -> None:
    """A run cancelled while it adopts the early host (which has not yet said it is ready)
    leaves neither the host nor its folders: no exit handler knows of them any more."""
    import asyncio
    import sys

    from wizard.engines.bundle import NodeBundle
    from wizard.runner.harness.pi import early

    folders = (tmp_path / "agent", tmp_path / "temp")
    for folder in folders:
        folder.mkdir()
    silent = [sys.executable, "-c", "import time; time.sleep(60)"]
    host = subprocess.Popen(
        silent, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    early._process, early._folders = host, folders

    async def cancelled_adoption() -> None:
        adoption = asyncio.ensure_future(early.adopt_early_host(NodeBundle.__new__(NodeBundle)))
        await asyncio.sleep(0.3)
        adoption.cancel()
        with pytest.raises(asyncio.CancelledError):
            await adoption

    asyncio.run(cancelled_adoption())
    assert host.poll() is not None
    assert early._process is None
    assert not any(folder.exists() for folder in folders)
