"""The CLI through Typer's runner: help, version, listing, and usage errors (exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from wizard import __version__
from wizard.cli import app

runner = CliRunner()


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in (
        "WIZARD_GATEWAY_URL",
        "WIZARD_GATEWAY_KEY",
        "ANTHROPIC_API_KEY",
        "WIZARD_HARNESS",
        "WIZARD_SEQUENCE",
        "WIZARD_MODEL",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("WIZARD_LOG_DIR", str(tmp_path / "logs"))
    monkeypatch.setenv("WIZARD_TELEMETRY", "0")


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"wizard {__version__}"


def test_help_lists_the_commands() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("run", "skill", "programs", "demo", "engines"):
        assert command in result.output


def test_programs_lists_every_program() -> None:
    result = runner.invoke(app, ["programs"])
    assert result.exit_code == 0
    for program in (
        "revenue-analytics",
        "mcp-analytics",
        "self-driving",
        "replay-vision",
        "transactional-email",
    ):
        assert program in result.output


def test_unknown_program_is_a_usage_error() -> None:
    result = runner.invoke(app, ["run", "revenue-analytic"])
    assert result.exit_code == 2
    assert "Unknown program 'revenue-analytic'" in result.output
    assert "Did you mean 'revenue-analytics'?" in result.output


def test_no_gateway_names_the_settings_and_the_demo(tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", "transactional-email", "--project", str(tmp_path)])
    assert result.exit_code == 2
    assert "No model gateway is configured" in result.output
    assert "WIZARD_GATEWAY_URL" in result.output and "wizard demo" in result.output


def test_unknown_harness_is_a_usage_error(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["run", "transactional-email", "--project", str(tmp_path), "--harness", "pie"]
    )
    assert result.exit_code == 2 and "Did you mean 'pi'?" in result.output


def test_missing_project_is_a_usage_error(tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        [
            "run",
            "transactional-email",
            "--project",
            str(tmp_path / "nope"),
            "--gateway-url",
            "http://127.0.0.1:9",
        ],
    )
    assert result.exit_code == 2 and "does not exist" in result.output


def test_unknown_demo_scenario() -> None:
    result = runner.invoke(app, ["demo", "--scenario", "sucess"])
    assert result.exit_code == 2 and "Did you mean 'success'?" in result.output


def test_engines_status() -> None:
    result = runner.invoke(app, ["engines", "status"])
    assert result.exit_code == 0 and "pi:" in result.output and "node:" in result.output


def test_unknown_engine() -> None:
    result = runner.invoke(app, ["engines", "install", "claude"])
    assert result.exit_code == 2
