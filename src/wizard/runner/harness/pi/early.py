"""A pi host started with the `wizard` process, before wizard has loaded the rest of itself.

Loading pi's SDK is most of the engine's start-up (about 1.3 s here), and wizard's own
imports and planning before a run takes its first step take about a second. So when the
command line runs an agent (`wizard run`, `skill` or `demo`), `__main__` calls `prestart`
first thing, which

1. starts Node on wizard's pi host (`host.mjs`, in the host's own folders, with a scrubbed
   environment), which loads nothing of the engine until it is told the engine is checked;
2. meanwhile checks the installed engine against its install record, exactly as a run's
   engine stage does (`bundle.checked_as_recorded`), and asks the switchboard whether the
   command runs pi (`runs_pi`: the config file and the program's binding count, as in the
   run's plan), and only if both say so
3. tells the host so (`ENGINE_CHECKED`): it loads pi's SDK while wizard loads, and waits for
   its launch on stdin. Otherwise the host is ended there and then.

So Node's own start (a tenth of a second here) overlaps the check and the decision, which
run in wizard's own process before its imports: they have about a second to spare before the
run needs the host. (Deciding before Node starts cost the first request 40–60 ms.)

While the host loads pi, wizard's own imports (most of a second of CPU) run in a thread at a
low priority, on a machine where nothing else runs (`load_behind_host`): the host's load is
the longer of the two, and on two cores the imports at the same priority slowed it by
0.2–0.4 s. The host is in wizard's session for that, in a process group of its own.

The host is a job on the run's timeline (`EARLY_HOST`, `wizard.ahead`): the run's pi
harness takes it and adopts it (`adopt_early_host`) instead of checking the engine and
starting a host itself; a run of another harness discards it as it makes its harness, and a
command that ends before (a usage error) at exit, which kills it and removes its folders.
An engine with no record yet, or none installed, is left to the run, which installs or
records it and says so. Nothing of pi runs before the check passed, and nothing of the
agent's before a session sends the launch. This module imports only the standard library
(and two leaves, `ahead` and `tools.child_env`) at load, so `__main__` pays nothing for it
otherwise.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from wizard.ahead import Key, Moment, Timeline
from wizard.tools.child_env import child_env

if TYPE_CHECKING:
    import asyncio

    from wizard.engines.bundle import NodeBundle

# The host's first line: its engine's files were checked against their install record.
ENGINE_CHECKED = b'{"engine": "checked"}\n'
LINE_LIMIT = 1 << 30  # one event line of the host's holds at most one whole assistant message
# The priority wizard's loading yields to the host's at (`load_behind_host`): 0 is the
# default, 19 the lowest.
_LOADING_NICE = 10
# How many times, how far apart in seconds, the machine is seen busy before it counts as busy.
_BUSY_LOOKS, _BUSY_GAP = 4, 0.002
HOST_SCRIPT = Path(__file__).with_name("host.mjs")  # wizard's pi host
# The user's NODE_EXTRA_CA_CERTS, as the host gets it: its commands get it back by its name.
COMMAND_CERTS = "WIZARD_COMMAND_NODE_EXTRA_CA_CERTS"
# A Unix socket's path has at most 107 bytes; the sandbox runtime puts its sockets (names of
# up to ~40 characters) into the host's temp folder.
_SOCKET_DIR_MAX = 64


@dataclass(frozen=True)
class EarlyHost:
    """A host started with the process: its process, its folders (pi's agent folder, its
    temp folder) and the engine it runs, as checked."""

    popen: subprocess.Popen[bytes]
    folders: tuple[Path, Path]
    prefix: Path


# pi's host, started with the process, on the run's timeline until the pi harness adopts it.
EARLY_HOST: Key[EarlyHost] = Key("pi's host", Moment.PROCESS_START, harness="pi")


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
    env = child_env()
    # Node reads the certificates NODE_EXTRA_CA_CERTS names as it starts (a tenth of a second
    # here). The host never speaks TLS (its one peer is wizard's proxy, on 127.0.0.1), so it
    # starts without them, and hands the name on to its commands (`host.mjs`'s `commandEnv`).
    if "NODE_EXTRA_CA_CERTS" in env:
        env[COMMAND_CERTS] = env.pop("NODE_EXTRA_CA_CERTS")
    env = {
        **env,
        "PI_CODING_AGENT_DIR": str(agent_dir),
        "PI_OFFLINE": "1",  # no model catalog or version check from the network
        "PI_TELEMETRY": "0",  # no install telemetry, no attribution headers
        "WIZARD_PI_ENTRY": str(engine.sdk_entry),
        "WIZARD_SANDBOX_ENTRY": str(engine.sandbox_entry),
        "TMPDIR": str(temp_dir),
    }
    return HostLaunch((str(engine.node), str(HOST_SCRIPT)), env, agent_dir, temp_dir)


def prestart(runs_pi: Callable[[], bool], ahead: Timeline) -> None:
    """Start the engine's host for a command that runs an agent, on `ahead` (`EARLY_HOST`),
    and meanwhile check the engine and ask `runs_pi` whether it runs pi (the switchboard's
    decision); the host goes on to load pi only if both say so, and is discarded otherwise."""
    if ahead.has(EARLY_HOST):
        return
    try:
        from wizard.engines.bundle import checked_as_recorded, installed_bundle

        engine = installed_bundle()  # on the Node `node_runtime` picks
        if engine is None:
            return
        folders = host_folders()
        try:
            launch = host_launch(engine, folders)
            # A process group of its own: a Ctrl-C at the terminal reaches wizard, which
            # ends the host in order. In wizard's session, though: Linux schedules each
            # session as a group of its own (autogroup), and wizard's loading can only
            # yield to the host (`load_behind_host`) when both are weighed in one.
            popen = subprocess.Popen(
                launch.command, cwd=launch.temp_dir, env=launch.env,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                process_group=0,
            )  # fmt: skip
        except BaseException:
            remove_folders(folders)
            raise
        ahead.start(EARLY_HOST, EarlyHost(popen, folders, engine.prefix), _discarded)
        if checked_as_recorded(engine.prefix) and runs_pi():
            assert popen.stdin is not None
            popen.stdin.write(ENGINE_CHECKED)
            popen.stdin.flush()
            return
    except Exception:  # whatever it is, the run's own engine stage meets it and says so
        pass
    ahead.discard(EARLY_HOST)  # an engine that is not as recorded is the run's to meet


def load_behind_host(
    modules: Sequence[str], host: EarlyHost | None, ours: Sequence[int] = ()
) -> None:
    """Import `modules` (what the run imports before it needs its engine: most of a second
    of CPU here) in a thread at a low priority, while the host started early loads pi.

    The host's load is the longer of the two (wizard's imports end about a second before the
    run needs the host) and uses more than one core: on two cores, wizard's imports at the
    same priority slowed it by 0.2–0.4 s. At a low priority they take what it leaves, on a
    machine where nothing else wants a core: with anything else running, they would get
    only a tenth of what that leaves (two busy loops beside a run on two cores: the first
    request 11.7 s after the start instead of 4.6 s). So nothing is done when anything but
    wizard, its host and its other processes started early (`ours`: the listing of the
    project's dependency folders, a fraction of a second's work) is running at that moment
    (as `/proc/loadavg` counts), without such a host, or off Linux (which gives a thread a
    priority of its own). The priority is the thread's alone: the run goes on at its own.
    Those other processes yield to the host too: they take the same priority."""
    if host is None or sys.platform != "linux" or _busy(host.popen.pid, *ours):
        return
    for pid in ours:
        with contextlib.suppress(OSError):  # it has ended
            os.setpriority(os.PRIO_PROCESS, pid, _LOADING_NICE)
    thread = threading.Thread(target=_load, args=(modules,), name="wizard-loading", daemon=True)
    thread.start()
    thread.join()


def _busy(*ours: int) -> bool:
    """Whether anything but this thread and the threads of the processes `ours` is running,
    at each of a few moments `_BUSY_GAP` apart. The machine's count and each process's are
    read one after the other, so a thread of ours may be in one and not in the other (the
    host's threads start and stop running all the time as it loads): one such look is not
    something else running, which would be seen at every look."""
    for look in range(_BUSY_LOOKS):
        try:
            if _running_now() - 1 - sum(_running_threads(pid) for pid in ours) <= 0:
                return False
        except (OSError, ValueError, IndexError):
            return True
        if look < _BUSY_LOOKS - 1:
            time.sleep(_BUSY_GAP)
    return True


def _running_now() -> int:
    """How many threads of the whole machine are running now (`/proc/loadavg`)."""
    with open("/proc/loadavg") as loadavg:
        return int(loadavg.read().split()[3].split("/")[0])


def _running_threads(pid: int) -> int:
    """How many of the process's threads are running now (none, once it is gone)."""
    running = 0
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{task}/stat") as stat:
                running += stat.read().rpartition(")")[2].split()[0] == "R"
    return running


def _load(modules: Sequence[str]) -> None:
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), _LOADING_NICE)
    for name in modules:
        # One that fails is imported again where the run needs it, and fails there as it
        # would have.
        with contextlib.suppress(Exception):
            importlib.import_module(name)


async def adopt_early_host(
    engine: NodeBundle, host: EarlyHost | None
) -> tuple[PopenProcess, Path, Path] | None:
    """The host started with the process (taken off the run's timeline), if it runs `engine`
    (checked) and waits for its launch: its process and its folders (pi's agent folder, its
    temp folder), the caller's now; None otherwise (then the caller checks the engine and
    starts one)."""
    if host is None:
        return None
    if host.prefix != engine.prefix:
        _end(host, adopted=False)
        return None
    # From here the host is this call's alone: whatever ends the call before it returns the
    # host (a Ctrl-C) ends the host too, and removes its folders, at once.
    try:
        return await _adopted(host.popen), *host.folders
    except BaseException:
        _end(host, adopted=True)
        raise


def _discarded(host: EarlyHost) -> None:
    """A host no run took (at the run's end or exit, or for a run of another harness)."""
    _end(host, adopted=False)


def _end(host: EarlyHost, *, adopted: bool) -> None:
    """Kill an early host and reap it (reading its pipes to their end, unless the event loop
    has them: `adopted`), then remove its folders."""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        host.popen.kill()
        host.popen.wait(timeout=5) if adopted else host.popen.communicate(timeout=5)
    remove_folders(host.folders)


def remove_folders(folders: Sequence[Path]) -> None:
    """Remove a host's private folders (what pi left in them too)."""
    for folder in folders:
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
