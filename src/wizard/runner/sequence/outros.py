"""The outro for every way a run can end, as values (rendering lives in `wizard.ui`).

An abort shows the program's first matching abort case, or the generic
`<label> aborted` screen with the reason. Every other error type has its own screen whose
body names the next step.
"""

from __future__ import annotations

from pathlib import Path

from wizard.outcome import AgentErrorType, AgentResult, Outro
from wizard.programs.types import AbortCase, ProgramConfig
from wizard.runner.harness.failures import GATEWAY_SAID

REPORT_TO = "If it keeps happening, report it to wizard@posthog.com with the log file."

_ERROR_SCREENS: dict[AgentErrorType, tuple[str, str]] = {
    AgentErrorType.NO_PROGRESS: (
        "The agent made no changes",
        "The agent ended without using any tool, so nothing in your project changed. Run the "
        "program again. " + REPORT_TO,
    ),
    AgentErrorType.INCOMPLETE_TASKS: (
        "The agent stopped before finishing",
        "Some of the agent's tasks were still open when it stopped, so the setup is "
        "incomplete. Review what it changed, then run the program again to finish.",
    ),
    AgentErrorType.RATE_LIMIT: (
        "Rate limit reached",
        "The model gateway rate-limited this run. Wait a minute, then run the program again.",
    ),
    AgentErrorType.API_ERROR: (
        "API Error",
        "The model request failed. Check WIZARD_GATEWAY_URL, WIZARD_GATEWAY_KEY and "
        "WIZARD_GATEWAY_API, then run again. " + REPORT_TO,
    ),
    AgentErrorType.SECURITY_VIOLATION: (
        "Security check stopped the setup",
        "The wizard's security fence ended the run. Review what the agent changed before you "
        "keep it.",
    ),
    AgentErrorType.ENGINE_FAILURE: (
        "The agent engine failed",
        "The agent engine crashed, stopped answering, or could not start, so the setup did not "
        "finish. The run's log file (its path is printed when the run starts, and in --ci "
        "output) has the engine's last words. Run `wizard engines status`, then run again. "
        + REPORT_TO,
    ),
    AgentErrorType.BUDGET_EXCEEDED: (
        "The run reached its budget",
        "The run stopped at its next model request once its budget was spent, so the setup "
        "did not finish. Review what it changed with `wizard diff` (or take it back with "
        "`wizard undo`), then run again with a larger --max-turns, --max-cost or --max-time.",
    ),
    AgentErrorType.MCP_MISSING: (
        "Agent could not access PostHog MCP",
        "The agent could not reach the PostHog MCP server. Check your network, then run again.",
    ),
    AgentErrorType.RESOURCE_MISSING: (
        "Agent could not access setup resource",
        "The agent could not reach a resource the setup needs. Check your network, then run again.",
    ),
}


def abort_outro(program: ProgramConfig, reason: str) -> tuple[Outro, AbortCase | None]:
    """The matched case's screen, or the generic aborted screen with the reason."""
    case = program.abort_case_for(reason)
    if case is not None:
        return Outro("error", case.message, case.body, case.docs_url), case
    body = reason or "The agent aborted the program."
    return Outro("error", f"{program.label} aborted", body, program.docs_url), None


def error_outro(program: ProgramConfig, result: AgentResult) -> Outro:
    """The screen for a non-abort error."""
    assert result.error is not None
    message, advice = _ERROR_SCREENS[result.error]
    if (result.message or "").startswith(GATEWAY_SAID):  # it says what to check: said once
        return Outro("error", message, result.message, program.docs_url)
    detail = f"{result.message}\n\n" if result.message else ""
    return Outro("error", message, detail + advice, program.docs_url)


def success_outro(program: ProgramConfig, result: AgentResult, project_dir: Path) -> Outro:
    """The success screen: message, report file, links, docs."""
    report = program.report_file
    has_report = report is not None and (project_dir / report).is_file()
    return Outro(
        "success",
        program.success_message,
        docs_url=program.docs_url,
        report_file=report if has_report else None,
        dashboard_url=result.dashboard_url,
        notebook_url=result.notebook_url,
    )
