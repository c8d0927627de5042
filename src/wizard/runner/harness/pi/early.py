"""A pi host started with the `wizard` process, before wizard has loaded the rest of itself.

Loading pi's SDK is most of the engine's start-up (about 1.3 s here), and wizard's own
imports and planning before a run takes its first step take about a second. So when the
command line says a pi run is coming (`wizard run`, `skill` or `demo`, no other harness
asked for), `__main__` calls `prestart` first thing. It starts this module as a process of
its own (its own interpreter, so that nothing it does slows wizard's loading), which:

1. checks the installed engine against its install record, exactly as a run's engine stage
   does (`bundle.checked_as_recorded`);
2. says so on its first stdout line (`{"ready": true, "prefix"}`, or `{"ready": false,
   "why"}` and exit), and only if all is well
3. becomes the pi host (`execve` of Node on `host.mjs`, in the host's own folders, which
   `prestart` made, and scrubbed environment): it loads pi's SDK and waits for its launch
   on stdin.

The run's pi harness adopts it (`adopt_early_host`) instead of checking the engine and
starting a host itself; a command that ends before (a usage error, another harness) kills it
at exit and removes its folders. A program whose own binding picks another harness
(`replay-vision`) starts one for nothing: its runs pay a Node start on another core. An
engine with no record yet, or none installed, is left to the run, which installs or records
it and says so. Nothing of pi runs before the check passed, and nothing of the agent's
before a session sends the launch. This module imports
only the standard library (and `tools.child_env`, a leaf) at load, so `__main__` pays
nothing for it otherwise, and the early process little.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wizard.tools.child_env import child_env

if TYPE_CHECKING:
    import asyncio

    from wizard.engines.bundle import NodeBundle
    from wizard.runner.harness.pi.session import HostProcess

_RUNS_PI = frozenset({"run", "skill", "demo"})
_NOT_A_RUN = frozenset({"-h", "--help", "-V", "--version", "--show-completion",
                        "--install-completion"})  # fmt: skip
_process: subprocess.Popen[bytes] | None = None
_folders: tuple[Path, Path] | None = None
_lock = threading.Lock()
HOST_SCRIPT = Path(__file__).with_name("host.mjs")  # wizard's pi host
# A Unix socket's path has at most 107 bytes; the sandbox runtime puts its sockets (names of
# up to ~40 characters) into the host's temp folder.
_SOCKET_DIR_MAX = 64


@dataclass(frozen=True)
class HostLaunch:
    """How to start a pi host on an engine: its command, environment and private folders."""

    command: tuple[str, ...]
    env: dict[str, str]
    agent_dir: Path
    temp_dir: Path


def host_folders() -> tuple[Path, Path]:
    """A new host's private folders: pi's agent folder, and its temp folder (the sandbox
    runtime's sockets go there), which are removed at close even when pi was killed and
    could not clean up after itself."""
    base = tempfile.gettempdir()
    if len(base) + len("/wizard-pi-tmp-xxxxxxxx") > _SOCKET_DIR_MAX and os.path.isdir("/tmp"):
        base = "/tmp"
    return Path(tempfile.mkdtemp(prefix="wizard-pi-")), Path(
        tempfile.mkdtemp(prefix="wizard-pi-tmp-", dir=base)
    )


def host_launch(engine: NodeBundle, folders: tuple[Path, Path] | None = None) -> HostLaunch:
    """A host's command, environment and folders (new ones unless given), on `engine`
    (which the caller has checked)."""
    agent_dir, temp_dir = folders or host_folders()
    env = {
        **child_env(),
        "PI_CODING_AGENT_DIR": str(agent_dir),
        "PI_OFFLINE": "1",
        "WIZARD_PI_ENTRY": str(engine.sdk_entry),
        "WIZARD_SANDBOX_ENTRY": str(engine.sandbox_entry),
        "TMPDIR": str(temp_dir),
    }
    return HostLaunch((str(engine.node), str(HOST_SCRIPT)), env, agent_dir, temp_dir)


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
    """Start the engine's check and then its host, in a process of their own, if this
    command runs pi."""
    global _process, _folders
    if runs_pi(argv, environ) is None or _process is not None:
        return
    atexit.register(discard_unclaimed)  # first: the folders go whenever the host goes
    with contextlib.suppress(OSError):
        _folders = host_folders()
        # `-P` and a folder of wizard's own: nothing of the current folder (the project,
        # often, where an agent may have planted a `wizard` package) is on its path.
        _process = subprocess.Popen(
            [sys.executable, "-P", "-m", __name__, *map(str, _folders)], cwd=_folders[1],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True,
        )  # fmt: skip


async def adopt_early_host(engine: NodeBundle) -> HostProcess | None:
    """The host started with the process, if it runs `engine` (checked) and waits for its
    launch; None otherwise (then the caller checks the engine and starts one)."""
    global _process, _folders
    import asyncio

    from wizard.runner.harness.pi.session import HostProcess

    with _lock:
        (popen, folders), _process, _folders = (_process, _folders), None, None
    if popen is None or folders is None:
        return None
    # From here the host is this call's alone: whatever ends it before it returns the host
    # (a Ctrl-C while the early process still checks, a host that is not ready) ends the
    # host too, and removes its folders, at once (no exit handler knows of it any more).
    try:
        host = HostProcess(engine, await _adopted(popen), *folders)
        assert host.process.stdout is not None
        try:
            line = await asyncio.wait_for(host.process.stdout.readline(), 60)
            said = json.loads(line or b"{}")
        except (TimeoutError, ValueError):
            said = {}
        if said.get("ready") and said.get("prefix") == str(engine.prefix):
            return host
    except BaseException:
        _end(popen, folders, adopted=True)
        raise
    _end(popen, folders, adopted=True)
    return None


def discard_unclaimed() -> None:
    """Kill a host no run took, and remove its folders (at exit, or when the run turned out
    to be another harness's: `registry.make_harness`)."""
    global _process, _folders
    with _lock:
        (popen, folders), _process, _folders = (_process, _folders), None, None
    _end(popen, folders, adopted=False)


def _end(
    popen: subprocess.Popen[bytes] | None, folders: tuple[Path, Path] | None, *, adopted: bool
) -> None:
    """Kill an early host (if there is one) and reap it (reading its pipes to their end,
    unless the event loop has them: `adopted`), then remove its folders."""
    if popen is not None:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            popen.kill()
            popen.wait(timeout=5) if adopted else popen.communicate(timeout=5)
    for folder in folders or ():
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
    """Return once process `pid` may have ended: its pidfd is readable, or time went by."""
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


def _check_then_become_the_host(folders: tuple[Path, Path]) -> None:
    """In the early process: check, say so, and become the host in `folders` (or exit)."""
    from wizard.engines.bundle import checked_as_recorded, installed_bundle

    def say(answer: dict[str, Any]) -> None:
        os.write(1, json.dumps(answer).encode() + b"\n")

    try:
        engine = installed_bundle()  # its Node's version is the run's to check (`ensure_bundle`)
        if engine is None or not checked_as_recorded(engine.prefix):
            return say({"ready": False, "why": "no engine checked against a record"})
        launch = host_launch(engine, folders)
    except Exception as exc:  # whatever it is, the run's own engine stage meets it
        return say({"ready": False, "why": str(exc)})
    say({"ready": True, "prefix": str(engine.prefix)})
    os.chdir(launch.temp_dir)  # the launch names the project, and the host moves there
    os.execve(launch.command[0], list(launch.command), launch.env)


if __name__ == "__main__":
    _check_then_become_the_host((Path(sys.argv[1]), Path(sys.argv[2])))
    sys.exit(3)
