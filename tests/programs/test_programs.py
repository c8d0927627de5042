"""Each program's abort cases, matched and unmatched (checklist §10.3 item 34, §10.7)."""

from __future__ import annotations

import pytest

from wizard.errors import UsageError
from wizard.programs import PROGRAMS, get_program, skill_program

MATCHED = [
    (
        "revenue-analytics",
        "Could not find a Stripe integration",
        "Could not find a Stripe integration",
    ),
    (
        "revenue-analytics",
        "could not find a posthog distinct_id",
        "Could not find a PostHog distinct_id",
    ),
    ("mcp-analytics", "no mcp server found", "No MCP server found"),
    (
        "mcp-analytics",
        "Unsupported language for MCP analytics",
        "Unsupported language for MCP analytics",
    ),
    (
        "mcp-analytics",
        "could not locate the server entry point",
        "Could not locate the MCP server entry point",
    ),
    ("self-driving", "github connection declined", "GitHub connection required"),
    (
        "self-driving",
        "self-driving is not available for this project",
        "PostHog Self-driving is not available for this project",
    ),
    ("self-driving", "requires-interactive-mode", "Interactive terminal required"),
    ("self-driving", "requirements-incomplete", "Setup needs your input"),
    (
        "replay-vision",
        "replay vision not available for this project",
        "Replay vision is not available for this project",
    ),
    (
        "transactional-email",
        "the api is not enabled for this project",
        "The email API is not enabled for this project",
    ),
    (
        "transactional-email",
        "The API is not enabled for this project",
        "The email API is not enabled for this project",
    ),
    (
        "transactional-email",
        "unsupported language for transactional email",
        "Unsupported language for transactional email",
    ),
    ("transactional-email", "no email sending code found", "No email sending code found"),
]

UNMATCHED = [
    ("mcp-analytics", "no mcp server found."),  # trailing period (item 8)
    ("mcp-analytics", "no mcp server found**"),  # markdown kept (item 7)
    ("self-driving", "requirements-incomplete."),
    ("revenue-analytics", "nothing to do"),
    ("transactional-email", "the api is not enabled for this project yet"),
    ("replay-vision", ""),
]


@pytest.mark.parametrize(("program", "reason", "message"), MATCHED)
def test_abort_cases_match(program: str, reason: str, message: str) -> None:
    case = get_program(program).abort_case_for(reason)
    assert case is not None and case.message == message


@pytest.mark.parametrize(("program", "reason"), UNMATCHED)
def test_abort_cases_miss(program: str, reason: str) -> None:
    assert get_program(program).abort_case_for(reason) is None


@pytest.mark.parametrize(
    ("program", "count"),
    [("revenue-analytics", 2), ("mcp-analytics", 3), ("self-driving", 4), ("replay-vision", 1)],
)
def test_the_seed_programs_declare_their_cases(program: str, count: int) -> None:
    assert len(get_program(program).abort_cases) == count


def test_each_reason_matches_exactly_one_case() -> None:
    for program, reason, _ in MATCHED:
        cases = [c for c in get_program(program).abort_cases if c.matches(reason)]
        assert len(cases) == 1, (program, reason)


def test_transactional_email_abort_body_names_the_next_step() -> None:
    case = get_program("transactional-email").abort_case_for(
        "the api is not enabled for this project"
    )
    assert case is not None
    assert "wizard run transactional-email" in case.body and "POSTHOG_EMAIL_API_KEY" in case.body


def test_skill_program_has_no_abort_cases() -> None:
    program = skill_program("foo")
    assert program.abort_cases == () and program.label == "foo"


def test_unknown_program_suggests_the_closest() -> None:
    with pytest.raises(UsageError) as raised:
        get_program("transactional-mail")
    assert "Did you mean 'transactional-email'?" in (raised.value.hint or "")


def test_every_program_has_copy() -> None:
    for program in PROGRAMS.values():
        assert program.label and program.success_message and program.spinner_message
        assert program.docs_url.startswith("https://")
