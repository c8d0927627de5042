"""`run_program`: says once, before the agent starts, what the run uses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.integrations import email_app, stripe_app
from wizard.events import AnalyticsEvent, EventRecorder, RunStarted
from wizard.outcome import Outcome
from wizard.programs import get_program
from wizard.programs.types import ProgramConfig
from wizard.runner import RunFlags, RunPlan, plan_run, run_program
from wizard.runner.harness.pi.harness import PiHarness
from wizard.testing.fake_session import FakeSession
from wizard.testing.script import call, reply, said

GATEWAY = "http://127.0.0.1:9"
OFF = {"WIZARD_SANDBOX": "off"}


def _plan(project: Path, program: str | ProgramConfig = "transactional-email",
          environ: dict[str, str] | None = None, **flags: Any) -> RunPlan:  # fmt: skip
    config = get_program(program) if isinstance(program, str) else program
    return plan_run(config, RunFlags(project=project, gateway_url=GATEWAY, **flags),
                    OFF if environ is None else environ)  # fmt: skip


async def test_a_run_says_what_it_uses_before_the_agent_starts(tmp_path: Path) -> None:
    email_app(tmp_path)
    recorder = EventRecorder()
    turns = [[reply(call("write", path="a.txt", content="x")), said("Done.")], [said("-")]]
    harness = PiHarness(session_factory=FakeSession(turns))
    await run_program(_plan(tmp_path), recorder, run_id="run-under-test", harness=harness)
    (started,) = [e for e in recorder.events if isinstance(e, RunStarted)]
    assert started == RunStarted(
        "transactional-email", str(tmp_path.resolve()), "pi", "linear", "claude-sonnet-4-6",
        "http://127.0.0.1:9", sandbox=False,
    )  # fmt: skip
    assert started.summary() == (
        f"transactional-email on {tmp_path.resolve()} · pi · linear · claude-sonnet-4-6 via "
        "http://127.0.0.1:9 · sandbox OFF"
    )
    first_spinner = next(i for i, e in enumerate(recorder.events) if e.kind == "spinner_started")
    assert recorder.events.index(started) < first_spinner


async def _broken_run(tmp_path: Path, **flags: Any) -> Outcome:
    email_app(tmp_path)
    (tmp_path / "app.py").write_text("x = 1\n")
    turns = [
        [reply(call("write", path="app.py", content="def f(:\n")), said("All done.")],
        [said("-")],
    ]
    harness = PiHarness(session_factory=FakeSession(turns))
    plan = _plan(tmp_path, **flags)
    return await run_program(plan, EventRecorder(), run_id="broken-run", harness=harness)


async def test_a_run_that_breaks_the_app_is_unverified_never_succeeded(tmp_path: Path) -> None:
    from wizard.journal import Journal
    from wizard.outcome import exit_code

    outcome = await _broken_run(tmp_path)
    assert (outcome.status, exit_code(outcome)) == ("unverified", 4)
    assert outcome.reason is not None and outcome.reason.startswith("app.py compiles failed; ")
    assert outcome.outro is not None and "app.py" in (outcome.outro.body or "")
    record = Journal(tmp_path).get("broken-run")
    assert record is not None and record.status == "unverified"  # `wizard runs` says so
    assert record.usage is not None and record.usage["turns"] == outcome.usage.turns


async def test_no_verify_skips_the_checks_and_says_so(tmp_path: Path) -> None:
    outcome = await _broken_run(tmp_path, no_verify=True)
    assert outcome.status == "succeeded"
    assert outcome.verification is not None and outcome.verification.status == "skipped"
    assert any(warning.startswith("Not verified (--no-verify)") for warning in outcome.warnings)


@pytest.mark.parametrize("written", ["valid", "invalid", "missing", "not asked"])
async def test_a_programs_own_check_and_proof_are_what_its_skill_must_leave(
    tmp_path: Path, written: str
) -> None:
    """self-driving's skill must write `.posthog/self-driving.json`, valid against the
    program's schema, with the goals the user gave and the project's repository: a run that
    says it is done without it, with goals that do not validate, or with goals it never asked
    for, is not a success."""
    import subprocess

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "remote", "add", "origin",
                    "git@github.com:acme/app.git"], check=True)  # fmt: skip
    content = '{"goals": ["Grow signups"], "repository": "github.com/acme/app"}'
    if written == "invalid":
        content = '{"goals": []}'
    asked = call("wizard_ask", questions=["Which product goals?"])
    config = call("write", path=".posthog/self-driving.json", content=content)
    work = [reply(asked), reply(config)] if written != "not asked" else [reply(config)]
    if written == "missing":
        work = [reply(call("read", path="README.md"))]
    (tmp_path / "README.md").write_text("# app\n")
    turns = [[*work, said("Done.")], [said("-")]]
    harness = PiHarness(session_factory=FakeSession(turns))

    async def answer(questions: list[str]) -> list[str]:
        return ["Grow signups this quarter"]

    outcome = await run_program(_plan(tmp_path, "self-driving"), EventRecorder(), ask=answer,
                                harness=harness)  # fmt: skip
    assert outcome.verification is not None
    (check,) = [c for c in outcome.verification.checks if c.name.endswith("json exists")]
    (proof,) = outcome.verification.proofs
    assert proof.kind == "static"
    if written == "valid":
        assert (outcome.status, check.status, proof.status) == ("succeeded", "passed", "proven")
        assert outcome.outro is not None and outcome.outro.message.endswith(", and proven")
        assert "goals are what the user answered" in proof.evidence
    elif written == "invalid":
        assert (outcome.status, check.status, proof.status) == ("unverified", "passed", "failed")
        assert "'repository' is a required property" in proof.reason
        assert outcome.outro is not None and "not proven" in outcome.outro.message
    elif written == "not asked":
        assert (outcome.status, proof.status) == ("unverified", "failed")
        assert "the goals were never asked for" in proof.reason
    else:
        assert (outcome.status, check.status, check.before) == ("unverified", "failed", None)
        assert outcome.reason is not None
        assert outcome.reason.startswith(".posthog/self-driving.json exists failed; ")
        assert proof.reason == ".posthog/self-driving.json was not written"


@pytest.mark.parametrize("keep", ["ten", "0", "-3", "2.5"])
async def test_a_bad_journal_setting_is_refused_before_anything_starts(
    tmp_path: Path, keep: str
) -> None:
    """`WIZARD_JOURNAL_KEEP=ten` raised a ValueError after the agent's run."""
    from wizard.errors import UsageError

    with pytest.raises(UsageError, match="WIZARD_JOURNAL_KEEP"):
        _plan(tmp_path, environ={**OFF, "WIZARD_JOURNAL_KEEP": keep})
    assert list(tmp_path.iterdir()) == []  # nothing was touched


@pytest.mark.parametrize("program", ["revenue-analytics", "transactional-email", "skill"])
async def test_a_run_that_changed_no_app_file_and_proved_nothing_is_never_set_up(
    tmp_path: Path, program: str
) -> None:
    """The agent looked around, said it was done, and changed nothing but the skill wizard
    installed: that is no setup (exit 4), though no proof failed (the app's Stripe call
    passes metadata the proof cannot follow: "cannot tell"), and a send path never recorded
    is not proven. `wizard skill` runs a skill that may only read."""
    from wizard.programs import skill_program

    email_app(tmp_path)
    (tmp_path / "billing.py").write_text(
        "import stripe\n\n\ndef subscribe(user):\n"
        "    return stripe.Customer.create(metadata=metadata_for(user))\n"
    )
    config = get_program(program) if program != "skill" else skill_program("transactional-email")
    turns = [[reply(call("read", path="mailer.py")), said("Done.")], [said("-")]]
    harness = PiHarness(session_factory=FakeSession(turns))
    outcome = await run_program(_plan(tmp_path, config), EventRecorder(), harness=harness)
    if program == "skill":
        assert outcome.status == "succeeded"
        return
    assert outcome.status == "unverified"
    assert outcome.outro is not None
    if program == "transactional-email":
        assert outcome.reason == ("one send reaches the email API was not proven: the skill "
                                  "recorded no entry to call (.posthog/email-probe.json is "
                                  "missing)")  # fmt: skip
        return
    assert outcome.reason == "the run changed no app file, and nothing proved the integration works"
    assert outcome.outro.message.endswith("nothing was set up")
    assert "set up" not in outcome.outro.message.replace("nothing was set up", "")


async def test_an_engine_that_takes_a_while_to_prepare_shows_a_spinner(tmp_path: Path) -> None:
    """The first pi install takes about 25 s: the screen used to sit still through it."""
    from collections.abc import Callable

    from wizard.events import SpinnerMessage, SpinnerStarted, SpinnerStopped

    class Installing(PiHarness):
        async def prepare(self, progress: Callable[[str], None], ahead: object) -> None:
            progress("installing pi 1.6.0 with npm ...")
            progress("pi 1.6.0 installed.")

    recorder = EventRecorder()
    turns = [[reply(call("read", path="README.md")), said("Done.")], [said("-")]]
    (tmp_path / "README.md").write_text("# app\n")
    harness = Installing(session_factory=FakeSession(turns))
    await run_program(_plan(tmp_path), recorder, harness=harness)
    spun = [
        e
        for e in recorder.events
        if isinstance(e, SpinnerStarted | SpinnerMessage | SpinnerStopped)
    ]
    assert spun[:3] == [
        SpinnerStarted("Preparing the pi engine: installing pi 1.6.0 with npm ..."),
        SpinnerMessage("Preparing the pi engine: pi 1.6.0 installed."),
        SpinnerStopped("The pi engine is ready"),
    ]


@pytest.mark.parametrize("preview", [False, True])
async def test_a_program_that_does_not_fit_ends_before_the_agent_with_nothing_changed(
    tmp_path: Path, preview: bool
) -> None:
    """A project whose code never sends email: transactional-email ends not applicable
    (exit 5) before any model is asked, installs nothing, journals nothing, leaves no preview,
    and names the program that would fit."""
    from wizard.journal import Journal
    from wizard.outcome import exit_code

    stripe_app(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    engine = FakeSession([[said("never asked")]])
    environ = {} if preview else OFF
    recorder = EventRecorder()
    outcome = await run_program(_plan(tmp_path, environ=environ, preview=preview), recorder,
                                harness=PiHarness(engine))  # fmt: skip
    assert (outcome.status, exit_code(outcome)) == ("not_applicable", 5)
    assert outcome.reason is not None and outcome.reason.startswith("no code here sends email")
    assert outcome.outro is not None
    assert "`wizard run revenue-analytics` would fit" in (outcome.outro.body or "")
    assert engine.prompts == [] and outcome.changed_files == ()
    told = [e for e in recorder.events if isinstance(e, AnalyticsEvent)
            and e.name == "program not applicable"]  # fmt: skip
    assert [e.properties["program"] for e in told] == ["transactional-email"]
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert Journal(tmp_path).records() == []


async def test_an_orchestrator_run_that_set_nothing_up_keeps_its_tasks_and_usage(
    tmp_path: Path,
) -> None:
    """Verification turns the outcome unverified (a proof failed); it does not rebuild it:
    the queue as it ended, what the run used, its harness and sequence survive (the queue
    was lost: `tasks: []`)."""
    from wizard.runner.sequence.orchestrator.prompts import SEED_LINE
    from wizard.testing.fake_session import FakeSessions

    stripe_app(tmp_path)
    plan = [[reply(call("enqueue_task", type="tag-customers", label="Tag", id="tag")),
             said("Planned.")]]  # fmt: skip
    finished = [[reply(call("complete_task", status="done", summary="ok", handoff="ok"))]]
    sessions = FakeSessions({SEED_LINE: [plan], "# Task tag:": [finished]})
    outcome = await run_program(
        _plan(tmp_path, "revenue-analytics", sequence="orchestrator"),
        EventRecorder(),
        harness=PiHarness(session_factory=sessions),
    )
    assert outcome.status == "unverified"  # its proof failed: the checkout carries no id
    assert outcome.reason is not None and "was not proven" in outcome.reason
    assert (outcome.harness, outcome.sequence) == ("pi", "orchestrator")
    assert [(task["id"], task["status"]) for task in outcome.tasks] == [("tag", "done")]
    assert outcome.usage is not None and outcome.usage.turns >= 2
    assert outcome.verification is not None and outcome.sandbox == "off"


async def test_a_tool_called_in_the_remark_reply_is_refused(tmp_path: Path) -> None:
    """The remark is words about the run, after its work: a call in that reply was carried
    out (a file written after the run said it was done). It is refused now."""
    email_app(tmp_path)
    turns = [
        [reply(call("write", path="a.txt", content="x")), said("Done.")],
        [reply(call("write", path="late.txt", content="x")), said("-")],
    ]
    session = FakeSession(turns)
    harness = PiHarness(session_factory=session)
    await run_program(_plan(tmp_path), EventRecorder(), harness=harness)
    assert (tmp_path / "a.txt").exists() and not (tmp_path / "late.txt").exists()
