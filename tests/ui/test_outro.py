"""Outro rendering is a pure function of the outcome, checked on a captured console."""

from __future__ import annotations

import io
from dataclasses import replace

from rich.console import Console

from wizard.outcome import AgentErrorType, Outcome, Outro
from wizard.ui.outro import print_outro


def rendered(outcome: Outcome) -> str:
    buffer = io.StringIO()
    print_outro(Console(file=buffer, width=100, no_color=True), outcome)
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


def test_what_a_run_changed_is_one_count_split_into_app_files_and_the_skill() -> None:
    changed = ("app.py", ".claude/skills/email/SKILL.md", ".claude/skills/email/.wizard-skill")
    outro = Outro("error", "The email API is not enabled", "Turn it on, then run again.")
    outcome = Outcome(
        "aborted", "transactional-email", outro=outro, run_id="r1", project="/home/u/app",
        changed_files=changed,
    )  # fmt: skip
    text = rendered(outcome)
    assert "This run changed 1 app file and the installed skill (2 files)." in text
    only_skill = rendered(replace(outcome, changed_files=changed[1:]))
    assert "This run changed 0 app files and the installed skill (2 files)." in only_skill


def test_the_report_to_read_is_named_by_its_absolute_path() -> None:
    outro = Outro("success", "Transactional email set up", report_file="report.md")
    outcome = Outcome("succeeded", "transactional-email", outro=outro, project="/home/u/app")
    assert "Check /home/u/app/report.md for details" in rendered(outcome)


def test_paths_and_commands_are_printed_whole_below_the_panel() -> None:
    project = "/home/someone/projects/a-rather-long-project-name/with/several/levels"
    outro = Outro("success", "Transactional email set up", report_file="report.md")
    outcome = Outcome(
        "succeeded", "transactional-email", outro=outro, run_id="r1", project=project,
        changed_files=("app.py",),
    )  # fmt: skip
    buffer = io.StringIO()
    print_outro(Console(file=buffer, width=60, no_color=True), outcome)
    lines = buffer.getvalue().splitlines()
    # Each on one line of its own, so a copy of it is the command (no border, no break).
    assert f"Check {project}/report.md for details" in lines
    assert f"Review:  wizard diff r1 --project {project}" in lines
    assert f"Undo:    wizard undo r1 --project {project}" in lines


def test_lines_removed_from_the_users_files_are_named_most_first() -> None:
    removed = {"settings.ini": 9, "app.py": 4, "a.txt": 2, "b.txt": 1}
    outcome = Outcome(
        "succeeded", "transactional-email", outro=Outro("success", "Set up"), run_id="r1",
        changed_files=("settings.ini",), edits={"removed_from_existing": removed},
    )  # fmt: skip
    assert (
        "Lines removed from files you had: settings.ini (9), app.py (4), a.txt (2) and 1 more."
        in rendered(outcome)
    )


def test_a_preview_says_what_applying_would_change_and_how_to_apply_or_discard() -> None:
    outcome = Outcome(
        "succeeded", "transactional-email", outro=Outro("success", "Preview ready: X"),
        run_id="r1", project="/p", changed_files=("app.py", "b.py"), preview=True,
    )  # fmt: skip
    text = rendered(outcome)
    assert "Applying this preview would change 2 app files." in text
    assert "Apply:   wizard apply r1 --project /p\n" in text
    assert "Discard: wizard discard r1 --project /p" in text and "wizard undo" not in text
    aborted = replace(outcome, status="aborted", outro=Outro("error", "Aborted"))
    assert "Apply:   wizard apply r1 --project /p --force" in rendered(aborted)
    nothing = replace(outcome, changed_files=())
    assert "The preview changed no files." in rendered(nothing)


def test_what_the_journal_could_not_store_is_named_changed_in_place_first() -> None:
    import os

    odd = os.fsdecode(b"evil\xff\x1b[2J.js")
    outcome = Outcome(
        "succeeded", "transactional-email", run_id="r1", project="/p",
        changed_files=("app.js",),
        unjournaled_changes=("node_modules", "big.bin"),
        dependency_changes={
            "node_modules/a/new.js": "added", "node_modules/b/lib.js": "added",
            f"node_modules/{odd}": "changed", "node_modules/c/gone.js": "removed",
        },
        repositories_added=("pkg/.git",),
    )  # fmt: skip
    text = " ".join(rendered(outcome).split())
    assert "a git repository appeared during the run: pkg/.git" in text
    assert "`wizard undo r1` removes it" in text
    assert "(2 added, 1 changed, 1 removed)" in text
    assert text.index("evil\\xff\\x1b[2J.js (changed)") < text.index("new.js (added)")
    assert "\x1b[2J" not in rendered(outcome)  # the name cannot rewrite the terminal
    assert "not journaled (undo leaves them): big.bin" in text
    assert "leaves them): node_modules" not in text  # its files are listed already
