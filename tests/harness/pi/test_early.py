"""Which command lines start pi's host with the process (`runner.harness.pi.early`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from wizard.engines.bundle import NodeBundle
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


def _early_host(tmp_path: Path, prefix: Path) -> tuple[subprocess.Popen[bytes], tuple[Path, Path]]:
    """A stand-in early host (silent, as a host is until its launch) and its folders."""
    import sys

    from wizard.runner.harness.pi import early

    folders = (tmp_path / "agent", tmp_path / "temp")
    for folder in folders:
        folder.mkdir()
    host = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    early._process, early._folders, early._prefix = host, folders, prefix
    return host, folders


def _bundle(prefix: Path) -> NodeBundle:
    return NodeBundle(node=Path("node"), cli=prefix / "cli.js", version="0", prefix=prefix)


@pytest.mark.parametrize("moment", ["adopting", "another engine"])
def test_an_early_host_no_run_takes_goes_with_its_folders_at_once(
    tmp_path: Path, moment: str
) -> None:
    """A run cancelled while it adopts the early host, or whose engine is not the one the
    host was started on, leaves neither the host nor its folders: once taken, no exit
    handler knows of them any more."""
    import asyncio

    from wizard.runner.harness.pi import early

    host, folders = _early_host(tmp_path, tmp_path / "engine")

    async def adopt() -> None:
        if moment == "another engine":
            assert await early.adopt_early_host(_bundle(tmp_path / "other")) is None
            return
        adoption = asyncio.ensure_future(early.adopt_early_host(_bundle(tmp_path / "engine")))
        await asyncio.sleep(0)  # it runs up to its first wait: joining the host's pipes
        adoption.cancel()
        with pytest.raises(asyncio.CancelledError):
            await adoption

    asyncio.run(adopt())
    assert host.poll() is not None
    assert (early._process, early._folders) == (None, None)
    assert not any(folder.exists() for folder in folders)
