"""How a run is launched: wizard's own log records go to the run's log, not the terminal."""

from __future__ import annotations

import logging

import pytest

from wizard.events import EventRecorder, LogLine
from wizard.launch import _logging_into


def test_log_records_go_into_the_run_log_and_never_bare_onto_stderr(
    capfd: pytest.CaptureFixture[str],
) -> None:
    recorder = EventRecorder()
    proxy_log = logging.getLogger("wizard.runner.harness.proxy")
    with _logging_into(recorder):
        proxy_log.info("gateway stream cut: the client went away")
        proxy_log.warning("pi wrote a line that is not JSON")
    proxy_log.warning("after the run: nowhere")  # the library's NullHandler, no last resort
    lines = [e for e in recorder.events if isinstance(e, LogLine)]
    assert [(line.message, line.level) for line in lines] == [
        ("gateway stream cut: the client went away", "debug"),  # the log file only
        ("pi wrote a line that is not JSON", "warning"),
    ]
    assert capfd.readouterr().err == ""


def test_outside_a_run_wizard_logs_nothing_to_a_users_terminal() -> None:
    """A program that uses wizard as a library, without a handler of its own: the records
    of wizard's modules go nowhere, never to stderr as Python's last resort would write them
    (while `import wizard` itself loads no `logging`)."""
    import subprocess
    import sys

    code = (
        "import sys, wizard; assert 'logging' not in sys.modules\n"
        "from wizard.events import log\n"
        "from wizard.runner.harness.proxy import log as proxy_log\n"
        "log.warning('bare warning'); proxy_log.error('bare error')"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
