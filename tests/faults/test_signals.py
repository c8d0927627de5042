"""Signals to wizard and to pi, while the model streams and while a command runs.

Every case runs `wizard run` as a user would (a process of its own, the real pi engine, the
scripted gateway) and asserts the exit code, the outcome, a bounded wall time (it ends; not a
speed test) and that no process is left: neither pi nor the command the agent started.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.integrations import email_app
from tests.scenarios.conftest import pi_processes_in, wizard_env

pytestmark = pytest.mark.live

STREAMING = {"blocks": [{"text": "thinking out loud " * 3000}], "chunk_chars": 8, "delay_ms": 20}
SLEEPER = "import time\ntime.sleep(300)\n"
BASH = {"blocks": [{"tool_call": {"name": "bash", "arguments": {"command": "python3 sleeper.py"}}}]}
ENDS_WITHIN_S = 60


def _commands_in(project: Path) -> list[int]:
    """The sleeper commands running in `project`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
                cwd = os.readlink(entry / "cwd")
            except OSError:
                continue
            if b"sleeper.py" in cmdline and Path(cwd) == project.resolve():
                found.append(int(entry.name))
    return found


class Run:
    """`wizard run` in a process of its own, on a project with a sleeper script."""

    def __init__(self, tmp_path: Path, url: str, *extra: str, terminal: int | None = None) -> None:
        self.project = email_app(tmp_path / "project")
        self.sleeper = self.project / "sleeper.py"
        self.sleeper.write_text(SLEEPER)
        self.outcome_file = tmp_path / "outcome.json"
        self.logs = tmp_path / "logs"
        self.temp = tmp_path / "t"  # the run's own temp folders: agent dir, bridge socket
        self.temp.mkdir()
        env = wizard_env(
            tmp_path, WIZARD_GATEWAY_URL=url, WIZARD_ENGINE_TIMEOUT="3", TMPDIR=str(self.temp)
        )
        self.started = time.monotonic()
        # In a terminal (the pty's side `terminal`): the live view, the pty its controlling
        # terminal, as a shell's window gives it; else the `--ci` lines, on pipes.
        shown = () if terminal is not None else ("--ci",)
        streams: dict[str, Any] = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
        if terminal is not None:
            env["TERM"] = "xterm-256color"
            streams = {"stdin": terminal, "stdout": terminal, "stderr": terminal,
                       "start_new_session": True, "preexec_fn": _controlling}  # fmt: skip
        self.process = subprocess.Popen(
            [sys.executable, "-m", "wizard", "run", "transactional-email", "--project",
             str(self.project), *shown, "--outcome-json", str(self.outcome_file), *extra],
            text=True, env=env, **streams,
        )  # fmt: skip

    def wait_until(self, ready: Any, what: str) -> None:
        deadline = time.monotonic() + 60
        while not ready():
            assert self.process.poll() is None, f"wizard ended before {what}"
            assert time.monotonic() < deadline, f"never saw {what}"
            time.sleep(0.05)

    def pi(self) -> int:
        """pi's pid, once pi is ready."""
        self.wait_until(lambda: self.logged("the pi engine is ready"), "pi ready")
        return pi_processes_in(self.project)[0]

    def logged(self, text: str) -> bool:
        """Whether the run's log holds `text` yet."""
        logs = list(self.logs.glob("*.jsonl"))
        return bool(logs) and text in logs[0].read_text()

    def finish(self) -> tuple[int, dict[str, Any]]:
        try:
            self.process.communicate(timeout=ENDS_WITHIN_S)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
        assert time.monotonic() - self.started < ENDS_WITHIN_S + 60
        assert pi_processes_in(self.project) == []
        assert _commands_in(self.project) == [], "the command survived"
        assert list(self.temp.iterdir()) == [], "the run's temp folders were left behind"
        return self.process.returncode, json.loads(self.outcome_file.read_text())


def _controlling() -> None:
    """In the child: its stdin, a pty, is its controlling terminal."""
    import fcntl
    import termios

    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def _started(
    tmp_path: Path, gateway_process: Any, during: str, terminal: int | None = None
) -> tuple[Run, int]:
    """A run under way, streaming or running the agent's command; and pi's pid."""
    url, _ = gateway_process({"responses": [BASH if during == "bash" else STREAMING]})
    run = Run(tmp_path, url, terminal=terminal)
    pi = run.pi()
    if during == "bash":
        run.wait_until(lambda: bool(_commands_in(run.project)), "the command start")
    else:  # pi's connection to wizard's gateway proxy is open: its model request is out
        run.wait_until(lambda: _requesting(pi), "the model request")
    return run, pi


def _requesting(pid: int) -> bool:
    """Whether the process has a TCP connection open (pi's, to wizard's gateway proxy)."""
    try:
        connections = psutil.Process(pid).net_connections(kind="tcp")
    except psutil.Error:
        return False
    return any(c.status == psutil.CONN_ESTABLISHED and c.raddr for c in connections)


@pytest.mark.parametrize(
    ("number", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)]
)
@pytest.mark.parametrize("during", ["streaming", "bash"])
def test_a_signal_to_wizard_ends_the_run_cleanly(
    tmp_path: Path, gateway_process: Any, number: int, code: int, during: str
) -> None:
    run, _ = _started(tmp_path, gateway_process, during)
    run.process.send_signal(number)
    returncode, outcome = run.finish()
    assert returncode == code
    assert (outcome["status"], outcome["signal"]) == ("cancelled", number)


@pytest.mark.parametrize("during", ["streaming", "bash"])
def test_closing_the_terminal_ends_the_run_as_a_hangup_with_its_outcome(
    tmp_path: Path, gateway_process: Any, during: str
) -> None:
    """The user closes the window wizard runs in: the kernel hangs the terminal up (SIGHUP)
    and every later write to it fails. It exited 1 with no outcome and temp folders left
    (the live view wrote to the dead terminal while the run closed); it ends 129, with
    its outcome written and nothing left."""
    import pty
    import threading

    master, slave = pty.openpty()
    shown = bytearray()

    def drain() -> None:  # the terminal's window: what wizard shows until it is closed
        with contextlib.suppress(OSError):
            while chunk := os.read(master, 65536):
                shown.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        run, _ = _started(tmp_path, gateway_process, during, terminal=slave)
    finally:
        os.close(slave)
    os.close(master)  # the window is closed
    returncode, outcome = run.finish()
    assert (returncode, outcome["status"], outcome["signal"]) == (129, "cancelled", 1)
    assert b"transactional-email" in shown  # it was a live view, in a terminal


@pytest.mark.parametrize("during", ["streaming", "bash"])
def test_killing_pi_is_an_engine_failure_and_leaves_no_process(
    tmp_path: Path, gateway_process: Any, during: str
) -> None:
    run, pi = _started(tmp_path, gateway_process, during)
    os.kill(pi, signal.SIGKILL)
    returncode, outcome = run.finish()
    assert returncode == 1
    assert outcome["error_type"] == "WIZARD_ENGINE_FAILURE"


@pytest.mark.parametrize("during", ["streaming", "bash"])
def test_a_stopped_pi_is_an_engine_failure_not_a_hang(
    tmp_path: Path, gateway_process: Any, during: str
) -> None:
    run, pi = _started(tmp_path, gateway_process, during)
    os.kill(pi, signal.SIGSTOP)
    returncode, outcome = run.finish()
    assert returncode == 1
    assert outcome["error_type"] == "WIZARD_ENGINE_FAILURE"
    assert "Log file: " in outcome["outro"]["body"]
    # Stopped during a command, only the stop tells; while streaming, silence tells as soon.
    assert "stopped" in outcome["reason"] or (during == "streaming" and "hung" in outcome["reason"])


def test_a_signal_stops_every_task_of_an_orchestrated_run(
    tmp_path: Path, gateway_process: Any
) -> None:
    plan = [
        {"tool_call": {"name": "enqueue_task", "arguments": {"type": t, "label": t, "id": t}}}
        for t in ("check", "client")
    ]
    url, _ = gateway_process(
        {
            "conversations": [
                {"match": "# Plan the setup", "responses": [{"blocks": plan}, {"blocks": []}]},
                {"match": "# Task check:", "responses": [STREAMING]},
                {"match": "# Task client:", "responses": [BASH]},
            ]
        }
    )
    run = Run(tmp_path, url, "--sequence", "orchestrator")
    run.wait_until(lambda: len(pi_processes_in(run.project)) == 2, "both tasks' pi")
    run.wait_until(lambda: bool(_commands_in(run.project)), "the command start")
    run.process.send_signal(signal.SIGTERM)
    returncode, outcome = run.finish()  # no pi, no command, no temp folder left
    assert (returncode, outcome["status"], outcome["sequence"]) == (
        143,
        "cancelled",
        "orchestrator",
    )
    # The queue as it ended: both tasks stopped with the run, neither failed.
    tasks = {t["id"]: (t["status"], t["error"]) for t in outcome["tasks"]}
    assert tasks == {"check": ("stopped", "stopped"), "client": ("stopped", "stopped")}
