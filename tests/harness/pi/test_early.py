"""pi's host started with the process (`runner.harness.pi.early`): ended when the run is not
pi's, adopted when it is (which command lines start it: `test_switchboard`)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wizard.ahead import Timeline
from wizard.engines.bundle import NodeBundle
from wizard.runner.harness.pi.early import EARLY_HOST, EarlyHost


def test_a_run_on_another_harness_ends_the_host_started_early(tmp_path: Path) -> None:
    """`make_harness` for another harness ends pi's early host at once (not at exit, where
    the run's sweep of leftover processes would count it as the agent's), and its folders;
    what is any run's (the dependency listing) stays."""
    from wizard.ahead import Key, Moment
    from wizard.runner.harness import registry

    ahead = Timeline()
    host, folders = _early_host(tmp_path, tmp_path / "engine", ahead)
    anyones: Key[str] = Key("any run's", Moment.PROCESS_START)
    ahead.start(anyones, "kept")
    registry.make_harness("anthropic", ahead)
    assert host.wait(timeout=5) != 0
    assert not ahead.has(EARLY_HOST) and ahead.take(anyones) == "kept"
    assert not any(folder.exists() for folder in folders)


def _early_host(
    tmp_path: Path, prefix: Path, ahead: Timeline
) -> tuple[subprocess.Popen[bytes], tuple[Path, Path]]:
    """A stand-in early host (silent, as a host is until its launch) and its folders, on
    `ahead` as `prestart` puts one."""
    from wizard.runner.harness.pi import early

    folders = (tmp_path / "agent", tmp_path / "temp")
    for folder in folders:
        folder.mkdir()
    host = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    ahead.start(EARLY_HOST, EarlyHost(host, folders, prefix), early._discarded)
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

    ahead = Timeline()
    host, folders = _early_host(tmp_path, tmp_path / "engine", ahead)

    async def adopt() -> None:
        taken = ahead.take(EARLY_HOST)
        if moment == "another engine":
            assert await early.adopt_early_host(_bundle(tmp_path / "other"), taken) is None
            return
        adopting = early.adopt_early_host(_bundle(tmp_path / "engine"), taken)
        adoption = asyncio.ensure_future(adopting)
        await asyncio.sleep(0)  # it runs up to its first wait: joining the host's pipes
        adoption.cancel()
        with pytest.raises(asyncio.CancelledError):
            await adoption

    asyncio.run(adopt())
    assert host.poll() is not None
    assert not ahead.has(EARLY_HOST)
    assert not any(folder.exists() for folder in folders)


def test_an_early_host_nothing_took_goes_with_the_timeline(tmp_path: Path) -> None:
    """The run's end (or the exit) closes its timeline: a host no run adopted is killed and
    its folders removed."""
    ahead = Timeline()
    host, folders = _early_host(tmp_path, tmp_path / "engine", ahead)
    ahead.close()
    assert host.poll() is not None
    assert not any(folder.exists() for folder in folders)
    assert ahead.said[-1].startswith("ahead: pi's host (the process starts")


def _stand_in_host(code: str) -> subprocess.Popen[bytes]:
    import sys

    return subprocess.Popen([sys.executable, "-c", code])


@pytest.mark.skipif(not Path("/proc/loadavg").exists(), reason="Linux's /proc")
def test_the_machine_is_busy_when_anything_but_wizard_and_its_host_runs() -> None:
    """Wizard's loading yields to the host only where nothing else wants a core: a low
    priority beside another busy process would starve it (`load_behind_host`)."""
    from wizard.runner.harness.pi import early

    host = _stand_in_host("import time; time.sleep(60)")
    busy = _stand_in_host("while True: pass")
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and (
            early._running_threads(busy.pid) == 0 or early._running_threads(host.pid) > 0
        ):  # the busy loop runs, and the host has started and sleeps
            time.sleep(0.01)
        assert early._running_threads(busy.pid) == 1
        assert early._running_threads(host.pid) == 0
        # The busy loop is another process: the machine is busy, whatever else runs.
        assert early._busy(host.pid)
    finally:
        for process in (host, busy):
            process.kill()
            process.wait()


@pytest.mark.skipif(not Path("/proc/loadavg").exists(), reason="Linux's /proc")
def test_wizard_s_own_processes_started_early_do_not_make_the_machine_busy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The listing of the project's dependency folders, started with the process, is
    wizard's own work: its running threads are not counted as something else's. A process
    that has ended runs nothing."""
    from wizard.runner.harness.pi import early

    ours = _stand_in_host("while True: pass")
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and early._running_threads(ours.pid) == 0:
            time.sleep(0.01)
        assert early._running_threads(ours.pid) == 1
        monkeypatch.setattr(early, "_running_now", lambda: 2)  # this thread, and it
        assert early._busy()
        assert not early._busy(ours.pid)
        monkeypatch.setattr(early, "_running_now", lambda: 3)  # and one more
        assert early._busy(ours.pid)
    finally:
        ours.kill()
        ours.wait()
    assert early._running_threads(ours.pid) == 0


def test_a_thread_of_ours_counted_once_and_not_in_its_process_is_not_a_busy_machine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The machine's count of running threads and the host's own are read one after the
    other: a host thread that stops running in between makes one look say busy. Only a
    machine seen busy at every look is busy."""
    from wizard.runner.harness.pi import early

    counts = iter([2, 1])  # a thread of the host's counted, then no longer running
    monkeypatch.setattr(early, "_running_now", lambda: next(counts))
    monkeypatch.setattr(early, "_running_threads", lambda pid: 0)
    assert not early._busy(12345)
    looks: list[int] = []
    monkeypatch.setattr(early, "_running_now", lambda: looks.append(1) or 2)  # at every look
    assert early._busy(12345)
    assert len(looks) == early._BUSY_LOOKS


def _recorder(folder: Path, name: str, body: str = "") -> None:
    """A module that records, when imported, its thread's name and priority."""
    (folder / f"{name}.py").write_text(
        "import os, threading\n"
        f"{body}\n"
        "WHERE = (threading.current_thread().name,\n"
        "         os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))\n"
    )


@pytest.mark.skipif(sys.platform != "linux", reason="a thread's own priority is Linux's")
def test_the_run_s_modules_load_behind_the_host_at_a_low_priority(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a host started early and nothing else running, the modules are imported in a
    thread of their own at a low priority; one that fails is skipped (the run imports it
    again where it needs it) and the next ones load; the caller's priority is unchanged."""
    import importlib

    from wizard.runner.harness.pi import early

    _recorder(tmp_path, "wiz_first")
    _recorder(tmp_path, "wiz_broken", "raise RuntimeError('broken')")
    _recorder(tmp_path, "wiz_last")
    monkeypatch.syspath_prepend(str(tmp_path))
    host = _stand_in_host("import time; time.sleep(60)")
    ours = _stand_in_host("import time; time.sleep(60)")  # the listing started early
    monkeypatch.setattr(early, "_busy", lambda *pids: False)
    before = os.getpriority(os.PRIO_PROCESS, 0)
    started = EarlyHost(host, (tmp_path, tmp_path), tmp_path)
    try:
        early.load_behind_host(
            ["wiz_first", "wiz_broken", "wiz_missing", "wiz_last"], started, [ours.pid]
        )
        assert os.getpriority(os.PRIO_PROCESS, ours.pid) == early._LOADING_NICE
        assert os.getpriority(os.PRIO_PROCESS, host.pid) == before
    finally:
        for process in (host, ours):
            process.kill()
            process.wait()
    for name in ("wiz_first", "wiz_last"):
        assert sys.modules[name].WHERE == ("wizard-loading", early._LOADING_NICE), name
        del sys.modules[name]
    assert "wiz_broken" not in sys.modules
    with pytest.raises(RuntimeError, match="broken"):  # as the run would meet it
        importlib.import_module("wiz_broken")
    assert os.getpriority(os.PRIO_PROCESS, 0) == before


@pytest.mark.parametrize("why", ["no host", "busy"])
def test_nothing_loads_behind_the_host_without_one_or_on_a_busy_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, why: str
) -> None:
    from wizard.runner.harness.pi import early

    _recorder(tmp_path, "wiz_not_loaded")
    monkeypatch.syspath_prepend(str(tmp_path))
    host = None if why == "no host" else _stand_in_host("import time; time.sleep(60)")
    ours = _stand_in_host("import time; time.sleep(60)")
    monkeypatch.setattr(early, "_busy", lambda *pids: True)
    started = None if host is None else EarlyHost(host, (tmp_path, tmp_path), tmp_path)
    try:
        early.load_behind_host(["wiz_not_loaded"], started, [ours.pid])
        assert os.getpriority(os.PRIO_PROCESS, ours.pid) == os.getpriority(os.PRIO_PROCESS, 0)
    finally:
        for process in (host, ours):
            if process is not None:
                process.kill()
                process.wait()
    assert "wiz_not_loaded" not in sys.modules


@pytest.mark.live
def test_a_command_the_switchboard_puts_on_another_harness_ends_the_host_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The host starts with any agent command; when the switchboard's decision (asked while
    Node starts) is another harness, it is ended before it loads anything of pi."""
    from wizard.engines import bundle
    from wizard.runner.harness.pi import early

    if bundle.installed_bundle() is None:
        pytest.skip("pi is not installed: `wizard engines install pi`")
    monkeypatch.setattr(bundle, "checked_as_recorded", lambda prefix: True)
    ahead = Timeline()
    started: list[EarlyHost | None] = []

    def runs_pi() -> bool:  # asked once the host has started: not pi
        started.append(ahead.peek(EARLY_HOST))
        return False

    early.prestart(runs_pi, ahead)
    (host,) = started
    assert host is not None and host.popen.poll() is not None  # started, then ended
    assert not ahead.has(EARLY_HOST)
    assert not any(folder.exists() for folder in host.folders)


def test_the_early_host_has_a_process_group_of_its_own_in_wizard_s_session(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The terminal's Ctrl-C goes to its foreground group only, which the host is not in;
    the scheduler weighs the host's threads with wizard's, so wizard's loading can yield."""

    from wizard.engines import bundle
    from wizard.runner.harness.pi import early

    if bundle.installed_bundle() is None:
        pytest.skip("pi is not installed: `wizard engines install pi`")
    monkeypatch.setattr(bundle, "checked_as_recorded", lambda prefix: True)
    ahead = Timeline()
    early.prestart(lambda: True, ahead)
    started = ahead.peek(EARLY_HOST)
    try:
        assert started is not None
        host = started.popen
        assert host.poll() is None
        assert os.getpgid(host.pid) == host.pid != os.getpgid(0)
        assert os.getsid(host.pid) == os.getsid(0)
    finally:
        ahead.close()
    assert host.poll() is not None
