"""A pi host's start and end at the session's side (`runner.harness.pi.session`): what a
cancelled start leaves, and who waits for a host killed at a session's close."""

from __future__ import annotations

from pathlib import Path

import pytest

from wizard.engines.bundle import NodeBundle


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


def test_an_abort_after_the_run_ended_asks_pi_nothing(tmp_path: Path) -> None:
    """The driver aborts a turn whose marker it saw; once the run's end has been read (the
    marker came with the reply's last bytes), pi has nothing to abort and is not asked (its
    answer, from a host still busy, took up to 20 ms of the exit). Before that, it is."""
    import asyncio

    from wizard.errors import EngineError
    from wizard.runner.harness.gate import ToolGate
    from wizard.runner.harness.pi.session import PiSession
    from wizard.runner.harness.types import EngineLaunch, PromptResult
    from wizard.tools.fence import Fence

    async def abort() -> None:
        gate = ToolGate([], Fence(tmp_path))
        launch = EngineLaunch(tmp_path, "m", "anthropic-messages", "http://127.0.0.1:9", "t", gate)
        session = PiSession(launch)  # no host: a command it sent would fail
        session._run_done = asyncio.get_running_loop().create_future()
        with pytest.raises(EngineError, match="not running"):
            await session.abort()
        session._run_done.set_result(PromptResult("stop"))
        await session.abort()

    asyncio.run(abort())


def test_the_reader_ends_every_wait_however_it_stops(tmp_path: Path) -> None:
    """A line that is JSON but no object is passed over, and a reader that stops on an error
    of its own (a subscriber that raised) still ends the waits for pi's answers: they used to
    wait for ever."""
    import asyncio

    from wizard.errors import EngineError
    from wizard.runner.harness.gate import ToolGate
    from wizard.runner.harness.pi.session import PiSession
    from wizard.runner.harness.types import EngineLaunch, PromptResult
    from wizard.tools.fence import Fence

    class Lines:
        pid, stdin, stderr, returncode = 0, None, None, None

        def __init__(self, *lines: bytes) -> None:
            self.stdout = asyncio.StreamReader()
            for line in lines:
                self.stdout.feed_data(line)

    def raising(message: object) -> None:
        raise RuntimeError("a subscriber's own error")

    async def read() -> None:
        gate = ToolGate([], Fence(tmp_path))
        launch = EngineLaunch(tmp_path, "m", "anthropic-messages", "http://127.0.0.1:9", "t", gate)
        session = PiSession(launch)
        session._process = Lines(b"[1, 2]\n", b'{"type": "message_update"}\n')  # type: ignore[assignment]
        waiting: asyncio.Future[PromptResult] = asyncio.get_running_loop().create_future()
        session._run_done = waiting
        session._subscribers.append(raising)
        with pytest.raises(RuntimeError, match="subscriber"):
            await session._read_stdout()
        assert session.lines_read == 2 and session._eof.is_set()
        with pytest.raises(EngineError, match="pi exited unexpectedly"):
            await waiting

    asyncio.run(read())
