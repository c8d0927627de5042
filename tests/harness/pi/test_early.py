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


def test_a_host_start_cancelled_while_its_process_starts_leaves_no_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run cancelled (a SIGTERM) while a session starts its host, the process made but not
    yet joined to the event loop, leaves neither the host nor its folders (an interrupted
    orchestrator run's next task used to leave pi's agent folder behind)."""
    import asyncio
    import sys

    from wizard.runner.harness.pi import early
    from wizard.runner.harness.pi.session import start_host

    made: list[Path] = []

    def recorded() -> tuple[Path, Path]:
        folders = host_folders()
        made.extend(folders)
        return folders

    host_folders = early.host_folders
    monkeypatch.setattr(early, "host_folders", recorded)
    engine = NodeBundle(node=Path(sys.executable), cli=tmp_path / "cli.js", version="0",
                        prefix=tmp_path)  # fmt: skip

    async def cancelled() -> None:
        starting = asyncio.ensure_future(start_host(engine))
        await asyncio.sleep(0)  # it runs up to its first wait: the process's pipes
        assert len(made) == 2 and all(folder.is_dir() for folder in made)
        starting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await starting

    asyncio.run(cancelled())
    assert [folder for folder in made if folder.exists()] == []


def test_a_session_leaves_the_wait_for_a_host_that_left_to_its_reaping_list(
    tmp_path: Path,
) -> None:
    """A host that said it has left is killed; with a `reaping` list the session's close does
    not wait for its end (the list holds that wait), without one it does."""
    import asyncio

    from wizard.runner.harness.gate import ToolGate
    from wizard.runner.harness.pi.session import PiSession
    from wizard.runner.harness.types import EngineLaunch
    from wizard.tools.fence import Fence

    class Ending:
        """A host process that has said it left and ends once `gone` is set after its kill."""

        pid, stdin, stdout, stderr = 0, None, None, None

        def __init__(self) -> None:
            self.gone, self.killed, self.returncode = asyncio.Event(), False, None

        def kill(self) -> None:
            self.killed = True

        terminate = kill

        async def wait(self) -> int:
            await self.gone.wait()
            return -9

    async def stop(reaping: list[asyncio.Future[int]] | None) -> tuple[Ending, bool]:
        gate = ToolGate([], Fence(tmp_path))
        launch = EngineLaunch(tmp_path, "m", "anthropic-messages", "http://127.0.0.1:9", "t", gate)
        session = PiSession(launch, reaping=reaping)
        session._left.set()
        process = Ending()
        stopping = asyncio.ensure_future(session._stop_process(process))  # type: ignore[arg-type]
        done, _ = await asyncio.wait({stopping}, timeout=0.5)
        process.gone.set()
        await stopping
        return process, bool(done)

    async def both() -> None:
        reaping: list[asyncio.Future[int]] = []
        process, returned = await stop(reaping)
        assert process.killed and returned and len(reaping) == 1
        assert await reaping[0] == -9
        process, returned = await stop(None)
        assert process.killed and not returned

    asyncio.run(both())
