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
