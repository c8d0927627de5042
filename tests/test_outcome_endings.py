"""Every ending of a run carries the whole run: an orchestrator run of transactional email,
launched as the CLI launches it (verification, the journal, the cancelled path), with each
engine session a strict fake at the engine boundary. Whatever ended it (success, a failed
check, a failed proof, nothing set up, an abort, a failed step, Ctrl-C, the budget, a
resume), its outcome names the harness, the sequence, the run, what it used, and each task
as the queue left it; a resumed run names the run it carried on and whether it planned
again."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.integrations import SENDER, email_app, email_sent
from wizard.launch import Screen, launch
from wizard.outcome import AgentErrorType, Outcome, exit_code
from wizard.programs import get_program
from wizard.runner import RunFlags
from wizard.runner.harness.pi.harness import PiHarness
from wizard.runner.sequence.orchestrator.prompts import SEED_LINE
from wizard.testing.fake_session import FakeSessions
from wizard.testing.script import call, reply, text

PROGRAM = get_program("transactional-email")
PLAN = [[reply(call("enqueue_task", type="check", label="Check", id="check"),
               call("enqueue_task", type="client", label="Client", id="client",
                    depends_on=["check"])),
         reply(text("Planned."))]]  # fmt: skip
HANGS = [[reply(text("thinking"), hang=True)]]


def _done(status: str = "done") -> dict[str, Any]:
    return call("complete_task", status=status, summary=status, handoff="python, mailer.py")


CHECKED = [[reply(_done())]]
CLIENT_TASK = "# Task client:"


def _planned(client: list[Any]) -> dict[str, list[Any]]:
    """The scripts of a run that plans `check` then `client`, `check` done, `client` as given."""
    return {SEED_LINE: [PLAN], "# Task check:": [CHECKED], CLIENT_TASK: [client]}


KEYED = SENDER.replace('os.environ["POSTHOG_EMAIL_API_KEY"]', '"phx_live_4f9a"')
# What the `client` task does, by the ending it leads to.
CLIENT = {
    "succeeded": [[reply(*email_sent()), reply(_done())]],
    "unverified by check": [
        [reply(*email_sent(), call("write", path="extra.py", content="def (")), reply(_done())]
    ],
    "unverified by proof": [
        [reply(*email_sent(), call("write", path="mailer.py", content=KEYED)), reply(_done())]
    ],
    "nothing set up": [[reply(_done())]],
    "aborted": [[reply(text("[ABORT] No email API key was provided"))]],
    "failed": [[reply(_done("failed"))]],
}
ENDS = {
    "succeeded": ("succeeded", None),
    "unverified by check": ("unverified", None),
    "unverified by proof": ("unverified", None),
    "nothing set up": ("unverified", None),
    "aborted": ("aborted", AgentErrorType.ABORT),
    "failed": ("failed", None),
}


class Launched:
    """A run launched in this process as `wizard run --ci` launches it, on fake sessions."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.project = email_app(tmp_path / "app")
        self.monkeypatch = monkeypatch
        monkeypatch.setenv("EMAIL_API_HOST", "http://127.0.0.1:9")  # the probe's own, in a run

    def __call__(self, scripts: dict[str, list[Any]], *, cut: str = "", **flags: Any) -> Outcome:
        sessions = FakeSessions(scripts)
        self.monkeypatch.setattr(
            "wizard.runner.run.make_harness", lambda *_: PiHarness(session_factory=sessions)
        )
        if cut:  # SIGTERM once a session whose first prompt has `cut` is waiting on its model
            threading.Thread(target=_cut_at, args=(sessions, cut), daemon=True).start()
        run = RunFlags(project=self.project, sequence="orchestrator",
                       gateway_url="http://127.0.0.1:9", **flags)  # fmt: skip
        return launch(PROGRAM, run, Screen(ci=True), dict(os.environ))


def _cut_at(sessions: FakeSessions, match: str) -> None:
    deadline = time.monotonic() + 60
    while not sessions.started(match) and time.monotonic() < deadline:
        time.sleep(0.02)
    os.kill(os.getpid(), signal.SIGTERM)  # the run's own handler: its clean teardown


def _whole(outcome: Outcome, tasks: dict[str, str], *, turns: bool = True) -> None:
    """`outcome` carries the run: what it ran on, its id, what it used (its turns, where one
    ended: the fake engine has no gateway to count requests at), and its tasks."""
    assert (outcome.harness, outcome.sequence, outcome.sandbox) == ("pi", "orchestrator", "on")
    assert outcome.run_id is not None and outcome.project is not None
    assert outcome.usage is not None and (outcome.usage.turns > 0) == turns, outcome.usage
    assert {t["id"]: t["status"] for t in outcome.tasks} == tasks
    assert outcome.outro is not None


@pytest.mark.parametrize("ending", list(CLIENT))
def test_each_ending_carries_the_whole_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ending: str
) -> None:
    run = Launched(tmp_path, monkeypatch)
    outcome = run(_planned(CLIENT[ending]))
    assert (outcome.status, outcome.error_type) == ENDS[ending], (outcome.reason, outcome.outro)
    client = {"failed": "failed", "aborted": "failed"}.get(ending, "done")
    _whole(outcome, {"check": "done", "client": client})
    assert (outcome.resumed_from, outcome.replanned) == (None, False)
    if ending.startswith("unverified") or ending == "nothing set up":
        assert outcome.verification is not None
        assert outcome.changed_files or ending == "nothing set up"


def test_a_cancelled_run_carries_the_whole_run_and_resumes_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = Launched(tmp_path, monkeypatch)
    cut = run(_planned(HANGS), cut=CLIENT_TASK)
    assert (cut.status, cut.signal, exit_code(cut)) == ("cancelled", signal.SIGTERM, 143)
    _whole(cut, {"check": "done", "client": "stopped"})
    assert cut.outro is not None and f"wizard resume {cut.run_id}" in (cut.outro.body or "")

    # Resumed, and cut again: the second cut still says which run it carried on.
    again = run({CLIENT_TASK: [HANGS]}, resume_from=cut.run_id, cut=CLIENT_TASK)
    assert again.status == "cancelled"
    _whole(again, {"check": "done", "client": "stopped"}, turns=False)  # its one turn was cut
    assert (again.resumed_from, again.replanned) == (cut.run_id, False)

    resumed = run({CLIENT_TASK: [CLIENT["succeeded"]]}, resume_from=again.run_id)
    assert resumed.status == "succeeded", (resumed.reason, resumed.verification)
    _whole(resumed, {"check": "done", "client": "done"})
    assert (resumed.resumed_from, resumed.replanned) == (again.run_id, False)
    assert [t["carried_over"] for t in resumed.tasks] == [True, False]


def test_a_resume_that_planned_again_says_so_whatever_its_ending(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cut while its planner worked, the run is resumed by planning again; a resume that
    ends unverified (nothing set up) still says it carried on that run and planned again."""
    run = Launched(tmp_path, monkeypatch)
    cut = run({SEED_LINE: [HANGS]}, cut=SEED_LINE)
    assert cut.status == "cancelled" and cut.tasks == ()
    assert cut.usage is not None and cut.usage.turns == 0  # its one turn was cut
    resumed = run(_planned(CLIENT["nothing set up"]), resume_from=cut.run_id)
    assert resumed.status == "unverified"
    _whole(resumed, {"check": "done", "client": "done"})
    assert (resumed.resumed_from, resumed.replanned) == (cut.run_id, True)


def test_a_run_the_budget_ended_carries_the_whole_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = Launched(tmp_path, monkeypatch)
    outcome = run(_planned(HANGS), max_time="3s")
    assert outcome.error_type is AgentErrorType.BUDGET_EXCEEDED, (outcome.status, outcome.reason)
    _whole(outcome, {"check": "done", "client": "failed"})
