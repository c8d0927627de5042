"""The entry point's exit: the code, the exit handlers and the streams as at a normal exit,
without the interpreter's slow teardown."""

from __future__ import annotations

import subprocess
import sys

import pytest

SCRIPT = """
import atexit, sys, threading, time
import wizard.cli
def main(ahead=None):
    print("buffered, not yet flushed", end="")
    threading.Thread(target=lambda: (time.sleep(0.2), print(" thread done", end=""))).start()
    raise SystemExit({code})
wizard.cli.main = main
atexit.register(lambda: print(" exit handler ran", end=""))
from wizard.__main__ import run
run()
"""


@pytest.mark.parametrize(("code", "exit_code", "said"), [
    ("0", 0, ""), ("None", 0, ""), ("4", 4, ""), ("130", 130, ""),
    ("'no gateway'", 1, "no gateway"),
])  # fmt: skip
def test_the_exit_keeps_the_code_the_handlers_threads_and_streams(
    code: str, exit_code: int, said: str
) -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT.format(code=code)],
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == exit_code
    assert done.stdout == "buffered, not yet flushed thread done exit handler ran"
    assert done.stderr.strip() == said
