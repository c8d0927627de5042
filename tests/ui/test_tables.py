"""The CLI's tables and lists at 80 columns: names and paths whole, summaries uncut."""

from __future__ import annotations

import io

from rich.console import Console
from typer.testing import CliRunner

from wizard.cli import app
from wizard.doctor import Check
from wizard.journal import RunRecord
from wizard.ui.tables import print_doctor, runs_table


def _at_80() -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, width=80, no_color=True), buffer


def test_doctor_prints_each_check_on_one_line_with_its_fix_below() -> None:
    path = "/home/someone/.cache/wizard/engines/pi-1.6.0+srt-0.0.83"
    checks = [
        Check("pi engine", True, f"1.6.0 with the sandbox runtime 0.0.83, in {path}"),
        Check("gateway", False, "not configured", "set WIZARD_GATEWAY_URL (see the README)"),
    ]
    console, buffer = _at_80()
    print_doctor(console, checks)
    lines = buffer.getvalue().splitlines()
    assert any(line.startswith("  ok   pi engine") and line.endswith(path) for line in lines)
    assert any(line.strip() == "fix: set WIZARD_GATEWAY_URL (see the README)" for line in lines)


def test_runs_keeps_program_names_whole() -> None:
    record = RunRecord(
        run_id="a1b2c3d4e5f6", program="transactional-email", harness="anthropic",
        sequence="orchestrator", started_at="2026-11-30T12:00:00", status="succeeded",
        before="0" * 40, changed=["app.py"],
    )  # fmt: skip
    console, buffer = _at_80()
    spent = record.model_copy(update={"usage": {"wall_seconds": 42.4, "cost_usd": 0.031}})
    console.print(runs_table([record, spent], "/home/someone/projects/app"))
    assert "transactional-email" in buffer.getvalue()
    assert "42s · $0.03" in buffer.getvalue()  # time and cost of a run that recorded them


def test_help_summaries_are_not_cut_at_80_columns() -> None:
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "80"})
    commands = result.output.split("Commands:", 1)[1]
    assert "..." not in commands and "…" not in commands, commands


def test_runs_shows_previews_as_such_with_their_state() -> None:
    base = RunRecord(run_id="p1", program="transactional-email", started_at="2026-11-30T12:00",
                     status="succeeded", before="0" * 40)  # fmt: skip
    pending = base.model_copy(update={"kind": "preview", "preview_state": "pending"})
    applied = pending.model_copy(update={"run_id": "p2", "preview_state": "applied",
                                         "applied_by": "a9"})  # fmt: skip
    discarded = pending.model_copy(update={"run_id": "p3", "preview_state": "discarded"})
    apply = base.model_copy(update={"run_id": "a9", "applies": "p2"})
    buffer = io.StringIO()
    Console(file=buffer, width=120, no_color=True).print(
        runs_table([apply, discarded, applied, pending], "/p")
    )
    text = buffer.getvalue()
    for shown in ("preview, pending", "preview, applied by a9", "preview, discarded",
                  "apply of p2"):  # fmt: skip
        assert shown in text, shown
