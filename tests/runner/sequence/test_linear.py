"""The linear sequence: every harness result becomes the right outro, status and exit code."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from wizard.events import EventRecorder
from wizard.outcome import AgentErrorType, AgentResult, exit_code
from wizard.programs import get_program, skill_program
from wizard.programs.types import ProgramConfig
from wizard.runner.harness.activity import ToolActivity
from wizard.runner.harness.pi.harness import PiHarness
from wizard.runner.harness.types import GatewaySettings
from wizard.runner.sequence.context import RunContext
from wizard.runner.sequence.linear import run_linear
from wizard.runner.sequence.outcomes import route_result
from wizard.runner.switchboard import Binding
from wizard.signals import REMARK_INSTRUCTION
from wizard.skills.sources import BundledSkills, DirectorySkills
from wizard.testing.fake_session import FakeSession


def context(
    tmp_path: Path, program: ProgramConfig, recorder: EventRecorder | None = None
) -> RunContext:
    return RunContext(
        program=program,
        project_dir=tmp_path,
        binding=Binding("linear", "pi", "scripted-1"),
        gateway=GatewaySettings(url="http://127.0.0.1:9"),
        skills=BundledSkills(),
        sink=recorder or EventRecorder(),
    )


def abort(reason: str, source: Any = "skill") -> AgentResult:
    return AgentResult(AgentErrorType.ABORT, reason, source)


def test_matched_abort_case(tmp_path: Path) -> None:
    recorder = EventRecorder()
    ctx = context(tmp_path, get_program("revenue-analytics"), recorder)
    outcome = route_result(ctx, abort("Could not find a Stripe integration"))
    assert (outcome.status, exit_code(outcome)) == ("aborted", 3)
    assert outcome.outro is not None
    assert outcome.outro.message == "Could not find a Stripe integration"
    assert outcome.outro.docs_url == "https://posthog.com/docs/revenue-analytics"
    (event,) = recorder.analytics("agent aborted")
    assert event.properties == {
        "integration": "revenue-analytics",
        "reason": "Could not find a Stripe integration",
        "matched": "Could not find a Stripe integration",
    }


def test_matched_case_without_docs_renders_no_docs_link(tmp_path: Path) -> None:
    outcome = route_result(
        context(tmp_path, get_program("mcp-analytics")), abort("no mcp server found")
    )
    assert outcome.outro is not None and outcome.outro.docs_url is None


def test_unmatched_abort_is_the_generic_screen(tmp_path: Path) -> None:
    recorder = EventRecorder()
    outcome = route_result(
        context(tmp_path, skill_program("foo"), recorder), abort("nothing to do")
    )
    assert outcome.outro is not None
    assert (outcome.outro.message, outcome.outro.body) == ("foo aborted", "nothing to do")
    assert outcome.outro.docs_url == "https://posthog.com/docs"
    assert recorder.analytics("agent aborted")[0].properties["matched"] is None


def test_an_abort_without_a_reason_gets_the_generic_body(tmp_path: Path) -> None:
    outcome = route_result(
        context(tmp_path, skill_program("foo")), AgentResult(AgentErrorType.ABORT, None, "skill")
    )
    assert outcome.outro is not None
    assert (outcome.outro.message, outcome.outro.body) == (
        "foo aborted",
        "The agent aborted the program.",
    )


def test_period_misses_the_case(tmp_path: Path) -> None:
    outcome = route_result(
        context(tmp_path, get_program("mcp-analytics")), abort("no mcp server found.")
    )
    assert outcome.outro is not None and outcome.outro.message == "mcp-analytics aborted"


def test_gateway_refusal_is_tagged_and_generic(tmp_path: Path) -> None:
    recorder = EventRecorder()
    ctx = context(tmp_path, get_program("transactional-email"), recorder)
    outcome = route_result(ctx, abort("Blocked by policy.", "gateway_policy"))
    assert (outcome.status, outcome.source, exit_code(outcome)) == ("aborted", "gateway_policy", 3)
    assert outcome.outro is not None and outcome.outro.body == "Blocked by policy."
    assert recorder.analytics("agent aborted")[0].properties["source"] == "gateway_policy"


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (AgentErrorType.NO_PROGRESS, "The agent made no changes"),
        (AgentErrorType.INCOMPLETE_TASKS, "The agent stopped before finishing"),
        (AgentErrorType.RATE_LIMIT, "Rate limit reached"),
        (AgentErrorType.API_ERROR, "API Error"),
        (AgentErrorType.SECURITY_VIOLATION, "Security check stopped the setup"),
        (AgentErrorType.ENGINE_FAILURE, "The agent engine failed"),
        (AgentErrorType.MCP_MISSING, "Agent could not access PostHog MCP"),
        (AgentErrorType.RESOURCE_MISSING, "Agent could not access setup resource"),
    ],
)
def test_every_error_type_has_its_own_screen(
    tmp_path: Path, error: AgentErrorType, message: str
) -> None:
    recorder = EventRecorder()
    outcome = route_result(
        context(tmp_path, get_program("transactional-email"), recorder),
        AgentResult(error, "detail"),
    )
    assert (outcome.status, exit_code(outcome), outcome.error_type) == ("failed", 1, error)
    assert outcome.outro is not None and outcome.outro.kind == "error"
    assert outcome.outro.message == message
    assert outcome.outro.body is not None and outcome.outro.body.startswith("detail")
    api = error in (AgentErrorType.API_ERROR, AgentErrorType.RATE_LIMIT)
    assert bool(recorder.analytics("agent api error")) == api


def test_success_runs_the_post_run_hook_then_the_success_outro(tmp_path: Path) -> None:
    ran: list[Path] = []
    program = replace(get_program("transactional-email"), post_run=ran.append)
    (tmp_path / "posthog-email-report.md").write_text("report")
    outcome = route_result(context(tmp_path, program), AgentResult(dashboard_url="https://d"))
    assert ran == [tmp_path]
    assert (outcome.status, exit_code(outcome)) == ("succeeded", 0)
    assert outcome.outro is not None and outcome.outro.report_file == "posthog-email-report.md"
    assert outcome.outro.dashboard_url == "https://d"


def test_abort_never_runs_the_post_run_hook(tmp_path: Path) -> None:
    ran: list[Path] = []
    program = replace(get_program("transactional-email"), post_run=ran.append)
    route_result(context(tmp_path, program), abort("x"))
    assert ran == []


def test_a_failing_post_run_hook_fails_the_run(tmp_path: Path) -> None:
    def broken(_: Path) -> None:
        raise RuntimeError("could not clean up")

    program = replace(get_program("transactional-email"), post_run=broken)
    outcome = route_result(context(tmp_path, program), AgentResult())
    assert outcome.status == "failed" and outcome.reason == "could not clean up"


async def test_skill_install_failure_names_the_fix(tmp_path: Path) -> None:
    ctx = replace(
        context(tmp_path, skill_program("nope")), skills=DirectorySkills(tmp_path / "none")
    )
    outcome = await run_linear(ctx, PiHarness(session_factory=FakeSession([])))
    assert outcome.status == "failed"
    assert outcome.outro is not None and "--skills-dir" in (outcome.outro.body or "")


SKILL_READ = {"blocks": [{"tool_call": {"name": "read", "arguments": {"path": "SKILL.md"}}}]}


@pytest.mark.parametrize(
    "program_id",
    ["revenue-analytics", "mcp-analytics", "self-driving", "replay-vision", "transactional-email"],
)
async def test_each_program_aborts_on_its_skill_marker(tmp_path: Path, program_id: str) -> None:
    program = get_program(program_id)
    case = program.abort_cases[0]
    reason = case.match.strip("^$").replace("\\", "")
    fake = FakeSession([[SKILL_READ, {"blocks": [{"text": f"Checked.\n[ABORT] {reason}"}]}]])
    outcome = await run_linear(context(tmp_path, program), PiHarness(session_factory=fake))
    fake.assert_complete()
    assert (outcome.status, outcome.reason) == ("aborted", reason)
    assert outcome.outro is not None and outcome.outro.message == case.message
    assert "A skill has been installed at .claude/skills/" in fake.prompts[0]


@pytest.mark.parametrize(
    ("said", "ending"), [("Checked.\n[ABORT] nothing to do", True), ("All set up.", False)]
)
async def test_a_run_that_ends_on_a_marker_says_so_to_its_tool_activity(
    tmp_path: Path, said: str, ending: bool
) -> None:
    """The run's end is known at the marker, before the engine's teardown: its tool activity
    is told then (the journal's closing listing starts), and quiet from the last call on."""
    quiet: list[tuple[int, bool]] = []
    activity = ToolActivity()
    activity.on_quiet = lambda mark: quiet.append((mark, activity.closing))
    fake = FakeSession([[SKILL_READ, {"blocks": [{"text": said}]}], [{"blocks": []}]])
    ctx = replace(context(tmp_path, skill_program("transactional-email")), activity=activity)
    await run_linear(ctx, PiHarness(session_factory=fake))
    assert activity.closing is ending
    assert quiet == ([(1, False), (1, True)] if ending else [(1, False)])


async def test_a_program_without_cases_aborts_with_the_generic_screen(tmp_path: Path) -> None:
    fake = FakeSession([[SKILL_READ, {"blocks": [{"text": "[ABORT] nothing to do"}]}]])
    ctx = context(tmp_path, skill_program("transactional-email"))
    outcome = await run_linear(ctx, PiHarness(session_factory=fake))
    assert outcome.outro is not None
    assert (outcome.outro.message, outcome.outro.body) == (
        "transactional-email aborted",
        "nothing to do",
    )


async def test_disallowed_tools_are_not_offered_and_are_denied(tmp_path: Path) -> None:
    ask = {"blocks": [{"tool_call": {"name": "wizard_ask", "arguments": {"questions": ["?"]}}}]}
    fake = FakeSession(
        [[ask, {"blocks": [{"text": "ok"}]}], [{"blocks": [{"text": "[WIZARD-REMARK] -"}]}]]
    )
    await run_linear(
        context(tmp_path, get_program("revenue-analytics")), PiHarness(session_factory=fake)
    )
    assert fake.launch is not None and "wizard_ask" not in fake.launch.gate.tools
    (end,) = [e for e in fake.events if e["type"] == "tool_end"]
    assert end["isError"] and "not allowed" in end["result"]
    assert fake.prompts[-1] == REMARK_INSTRUCTION


async def test_allowed_tools_limit_the_program_tools(tmp_path: Path) -> None:
    program = replace(get_program("transactional-email"), allowed_tools=("check_env_keys",))
    stop = {"blocks": [{"text": "[ABORT] the api is not enabled for this project"}]}
    fake = FakeSession([[stop]])
    await run_linear(context(tmp_path, program), PiHarness(session_factory=fake))
    assert fake.launch is not None
    host_tools = set(fake.launch.gate.tools)
    todo_list = {"TaskCreate", "TaskUpdate", "TaskGet", "TaskList"}
    assert host_tools == {"read", "write", "edit", *todo_list, "check_env_keys"}
