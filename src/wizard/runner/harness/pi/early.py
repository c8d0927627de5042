"""A pi host started with the `wizard` process, before wizard has loaded the rest of itself.

Loading pi's SDK is most of the engine's start-up (about 1.3 s here), and wizard's own
imports and planning before a run takes its first step about as long. So when the command
line says a pi run is coming (`wizard run`, `skill` or `demo`, no other harness asked for),
`__main__` calls `prestart` first thing: a thread checks the installed engine against its
install record, exactly as a run's engine stage does, and only then starts a host, which
loads the SDK and waits for its launch on stdin. The run's pi harness adopts it
(`adopt_early_host`) instead of checking the engine and starting one itself; a run that ends
before (a usage error, another harness) never launches it, and it is killed at exit.

Nothing changes for what the host may do: it runs nothing of pi's before the check passed,
and nothing of the agent's before a session sends the launch. An engine with no record yet
(installed before records were kept) or not installed at all is left to the run, which
installs or records it and says so. This module imports only the standard library at load,
so that `__main__` pays nothing for it when the command is not a run.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shutil
import subprocess
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncio

    from wizard.engines.bundle import NodeBundle
    from wizard.runner.harness.pi.session import HostProcess

_RUNS_PI = frozenset({"run", "skill", "demo"})
_NOT_A_RUN = frozenset({"-h", "--help", "-V", "--version", "--show-completion",
                        "--install-completion"})  # fmt: skip


@dataclass
class _Early:
    engine: NodeBundle
    popen: subprocess.Popen[bytes]
    agent_dir: Path
    temp_dir: Path


_thread: threading.Thread | None = None
_early: _Early | None = None
_exiting = False  # set at exit: no host starts after it
_lock = threading.Lock()


def runs_pi(argv: Sequence[str], environ: Mapping[str, str]) -> tuple[str, str] | None:
    """The command (run, skill or demo) and its program or skill, of a command line that
    will run pi as far as it and the environment say; None for any other command."""
    words = [w for w in argv if not w.startswith("-")]
    if not words or words[0] not in _RUNS_PI or _NOT_A_RUN.intersection(argv):
        return None
    harness = environ.get("WIZARD_HARNESS") or "pi"
    for number, word in enumerate(argv):
        if word == "--harness" and number + 1 < len(argv):
            harness = argv[number + 1]
        elif word.startswith("--harness="):
            harness = word.split("=", 1)[1]
    if harness != "pi" or (words[0] != "demo" and len(words) < 2):
        return None
    return words[0], words[1] if len(words) > 1 else ""


def prestart(argv: Sequence[str], environ: Mapping[str, str]) -> None:
    """Start checking the engine and a host in the background, if this command runs pi."""
    global _thread
    found = runs_pi(argv, environ)
    if found is None or _thread is not None:
        return
    program = found[1] if found[0] == "run" else None
    atexit.register(_discard_unclaimed)
    _thread = threading.Thread(target=_start, args=(program,), daemon=True, name="wizard-pi")
    _thread.start()


def _start(program: str | None) -> None:
    global _early
    try:
        if program is not None and not _runs_on_pi(program):
            return
        from wizard.engines.bundle import checked_as_recorded, find_node, installed_bundle
        from wizard.runner.harness.pi.session import host_launch

        find_node()
        engine = installed_bundle()
        if engine is None or not checked_as_recorded(engine.prefix):
            return  # the run installs or records it, and says so
        with _lock:
            if _exiting:
                return
            launch = host_launch(engine)
            popen = subprocess.Popen(
                launch.command, cwd=launch.temp_dir, env=launch.env, stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
            )  # fmt: skip
            _early = _Early(engine, popen, launch.agent_dir, launch.temp_dir)
    except Exception:  # whatever it was, the run's own engine stage meets it and says so
        return


def _runs_on_pi(program: str) -> bool:
    """Whether the program exists and its own binding leaves it on pi (the flag and the
    environment have said nothing)."""
    from wizard.programs import PROGRAMS

    config = PROGRAMS.get(program)
    return config is not None and config.binding.harness in (None, "pi")


async def adopt_early_host(engine: NodeBundle) -> HostProcess | None:
    """The host started with the process, if it runs `engine` and still waits for its
    launch; None otherwise (then the caller checks the engine and starts one)."""
    global _early
    import asyncio

    if _thread is not None:
        await asyncio.to_thread(_thread.join)
    with _lock:
        early, _early = _early, None
    if early is None:
        return None
    from wizard.runner.harness.pi.session import HostProcess

    host = HostProcess(early.engine, await _adopted(early.popen), early.agent_dir, early.temp_dir)
    if early.popen.poll() is not None or early.engine.prefix != engine.prefix:
        await host.discard()
        return None
    return host


def _discard_unclaimed() -> None:
    """At exit: kill a host no run took, and remove its folders; none starts after this."""
    global _exiting
    with _lock:
        _exiting = True
        early = _early
    if early is None:
        return
    with contextlib.suppress(OSError):
        early.popen.kill()
        early.popen.wait(timeout=5)
    for folder in (early.agent_dir, early.temp_dir):
        shutil.rmtree(folder, ignore_errors=True)


class PopenProcess:
    """A started `subprocess.Popen` seen as the `asyncio.subprocess.Process` a pi session
    uses: its pipes as asyncio streams, and an exit to wait for without a thread."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        stdin: asyncio.StreamWriter,
        stdout: asyncio.StreamReader,
        stderr: asyncio.StreamReader,
    ) -> None:
        self._popen = popen
        self.pid = popen.pid
        self.stdin: asyncio.StreamWriter | None = stdin
        self.stdout: asyncio.StreamReader | None = stdout
        self.stderr: asyncio.StreamReader | None = stderr

    @property
    def returncode(self) -> int | None:
        """Its exit status once it has ended."""
        return self._popen.poll()

    def kill(self) -> None:
        """SIGKILL."""
        self._popen.kill()

    def terminate(self) -> None:
        """SIGTERM."""
        self._popen.terminate()

    async def wait(self) -> int:
        """Wait for it to end (on its pidfd where there is one, else polling)."""

        while (code := self._popen.poll()) is None:
            await _exited(self.pid)
        return code


async def _exited(pid: int) -> None:
    """Return once process `pid` may have ended: its pidfd is readable, or 20 ms went by."""
    import asyncio

    try:
        descriptor = os.pidfd_open(pid)  # type: ignore[attr-defined,unused-ignore]
    except (AttributeError, OSError):
        await asyncio.sleep(0.02)
        return
    loop = asyncio.get_running_loop()
    readable: asyncio.Future[None] = loop.create_future()

    def ended() -> None:
        if not readable.done():
            readable.set_result(None)

    loop.add_reader(descriptor, ended)
    try:
        await asyncio.wait_for(readable, 1.0)
    except TimeoutError:
        pass
    finally:
        loop.remove_reader(descriptor)
        os.close(descriptor)


async def _adopted(popen: subprocess.Popen[bytes]) -> PopenProcess:
    """`popen`'s pipes joined to the running event loop."""
    import asyncio

    from wizard.runner.harness.pi.session import LINE_LIMIT

    assert popen.stdin is not None and popen.stdout is not None and popen.stderr is not None
    loop = asyncio.get_running_loop()
    readers = []
    for pipe in (popen.stdout, popen.stderr):
        reader = asyncio.StreamReader(limit=LINE_LIMIT, loop=loop)
        await loop.connect_read_pipe(functools.partial(asyncio.StreamReaderProtocol, reader), pipe)
        readers.append(reader)
    transport, protocol = await loop.connect_write_pipe(
        lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader(loop=loop)), popen.stdin
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return PopenProcess(popen, writer, readers[0], readers[1])
