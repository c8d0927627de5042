"""Outro rendering is a pure function of the outcome, checked on a captured console."""

from __future__ import annotations

import io

from rich.console import Console

from wizard.outcome import AgentErrorType, Outcome, Outro
from wizard.ui.outro import render_outro


def rendered(outcome: Outcome) -> str:
    buffer = io.StringIO()
    Console(file=buffer, width=100, no_color=True).print(render_outro(outcome))
    return buffer.getvalue()


def test_success_outro() -> None:
    outro = Outro(
        "success",
        "Transactional email set up",
        docs_url="https://docs",
        report_file="r.md",
        dashboard_url="https://d/1",
    )
    text = rendered(Outcome("succeeded", "transactional-email", outro=outro))
    assert "✔ Transactional email set up" in text
    assert "Check ./r.md for details" in text and "Dashboard: https://d/1" in text
    assert "Docs: https://docs" in text and "exit 0" in text


def test_abort_outro_shows_message_body_and_docs() -> None:
    outro = Outro(
        "error", "The email API is not enabled", "Turn it on, then run again.", "https://docs"
    )
    outcome = Outcome(
        "aborted", "transactional-email", error_type=AgentErrorType.ABORT, outro=outro
    )
    text = rendered(outcome)
    assert "✘ The email API is not enabled" in text and "Turn it on, then run again." in text
    assert "exit 3" in text
    assert "✔" not in text


def test_no_color_is_honoured(monkeypatch: object) -> None:
    import os

    from wizard.ui.console import make_console

    os.environ["NO_COLOR"] = "1"
    try:
        assert make_console().no_color
    finally:
        del os.environ["NO_COLOR"]
