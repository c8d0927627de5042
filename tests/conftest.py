"""Suite-wide setup."""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator

import psutil
import pytest

from wizard.engines.bundle import engines_dir
from wizard.processes import become_subreaper

# Started as a background job, the test process inherits SIGINT ignored, and so would every
# process it starts (an ignored signal survives exec): a Ctrl-C test could then never pass.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
# Pin the engine directory before any test moves HOME, so the pi installed by
# `wizard engines install pi` is the one every test uses (no reinstall per fake HOME).
os.environ.setdefault("WIZARD_ENGINES_DIR", str(engines_dir()))
# Run journals of the tests' projects stay out of the user's state folder, and go with the run.
if "WIZARD_STATE_DIR" not in os.environ:
    os.environ["WIZARD_STATE_DIR"] = tempfile.mkdtemp(prefix="wizard-test-state-")
    atexit.register(shutil.rmtree, os.environ["WIZARD_STATE_DIR"], True)


@pytest.fixture(scope="session", autouse=True)
def _no_process_left() -> Iterator[None]:
    """The suite leaves no process behind. The test process adopts the orphans of everything
    it starts (a child subreaper, as wizard itself is), so a command whose pi was killed still
    counts; at the end, whatever still runs below it fails the suite, named, and is stopped."""
    become_subreaper()
    yield
    deadline = time.monotonic() + 10  # teardown of the last test may still be under way
    while (left := _still_running()) and time.monotonic() < deadline:
        time.sleep(0.2)
    names = [f"{p.pid} {' '.join(_cmdline(p))[:200]}" for p in left]
    for process in left:
        with contextlib.suppress(psutil.Error):
            process.kill()
    assert not names, "processes left behind by the suite:\n" + "\n".join(names)


def _still_running() -> list[psutil.Process]:
    running = []
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if child.status() == psutil.STATUS_ZOMBIE:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(child.pid, os.WNOHANG)  # an adopted orphan that has exited
                continue
            running.append(child)
    return running


def _cmdline(process: psutil.Process) -> list[str]:
    try:
        return process.cmdline()
    except psutil.Error:
        return ["?"]
