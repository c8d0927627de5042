"""Engine install errors name the fix: no Node, an old Node, npm failing."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from wizard.cli import app
from wizard.errors import EngineError, EngineInstallError
from wizard.runner.harness.pi import engine


def _fake_bin(directory: Path, name: str, script: str) -> None:
    path = directory / name
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


@pytest.fixture
def fake_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("WIZARD_ENGINES_DIR", str(tmp_path / "engines"))
    return bin_dir


def test_no_node(fake_path: Path) -> None:
    with pytest.raises(EngineError) as raised:
        engine.find_node()
    message = str(raised.value)
    assert "Install Node.js ≥ 20.6" in message and "wizard engines install pi" in message
    assert "--harness anthropic" not in message  # that harness is not there to fall back on


def test_old_node(fake_path: Path) -> None:
    _fake_bin(fake_path, "node", "echo v18.19.0")
    with pytest.raises(EngineError, match=r"v18\.19\.0 is too old"):
        engine.find_node()


def test_new_enough_node(fake_path: Path) -> None:
    _fake_bin(fake_path, "node", "echo v20.6.0")
    assert engine.find_node() == fake_path / "node"


def test_npm_failure_shows_its_output(fake_path: Path) -> None:
    _fake_bin(fake_path, "node", "echo v22.1.0")
    _fake_bin(
        fake_path, "npm", "echo 'npm error code E404'; echo 'npm error 404 Not Found'; exit 1"
    )
    with pytest.raises(EngineInstallError) as raised:
        engine.install_pi()
    message = str(raised.value)
    assert "npm ci failed (exit 1)" in message and "npm error 404 Not Found" in message
    assert "wizard engines install pi" in message
    assert engine.installed_pi() is None
    assert not engine.pi_prefix().exists()


def test_the_shipped_lockfile_pins_pi_and_the_sandbox_runtime_exactly() -> None:
    import json
    from importlib import resources

    lock = resources.files("wizard.runner.harness.pi") / "engine_lock"
    manifest = json.loads((lock / "package.json").read_text())
    pinned = {engine.PI_PACKAGE: engine.PI_VERSION, engine.SANDBOX_PACKAGE: engine.SANDBOX_VERSION}
    assert manifest["dependencies"] == pinned
    packages = json.loads((lock / "package-lock.json").read_text())["packages"]
    for name, version in pinned.items():
        assert packages[f"node_modules/{name}"]["version"] == version


def test_npm_progress_reports_what_npm_reports(fake_path: Path) -> None:
    _fake_bin(fake_path, "node", "echo v22.1.0")
    fetches = "; ".join(["echo 'npm http fetch GET 200 https://registry/pkg 5ms'"] * 375)
    _fake_bin(fake_path, "npm", f"{fetches}; echo 'added 188 packages in 3s'; exit 1")
    lines: list[str] = []
    with pytest.raises(EngineInstallError):
        engine.install_pi(progress=lines.append)
    assert "added 188 packages in 3s" in lines
    assert not any("375" in line or "downloaded" in line for line in lines)


def test_status_says_node_is_missing_when_pi_is_installed(fake_path: Path) -> None:
    prefix = engine.pi_prefix()
    cli = prefix / "node_modules" / engine.PI_PACKAGE / "dist" / "cli.js"
    cli.parent.mkdir(parents=True)
    cli.write_text("")
    sandbox = prefix / "node_modules" / engine.SANDBOX_PACKAGE / "dist" / "index.js"
    sandbox.parent.mkdir(parents=True)
    sandbox.write_text("")
    (prefix / ".complete").write_text(engine.PI_VERSION)
    result = CliRunner().invoke(app, ["engines", "status"])
    assert result.exit_code == 0
    assert "node: missing (Node.js was not found on PATH" in result.output
    assert (
        f"pi: {engine.PI_VERSION} in {prefix}, but it cannot run without Node.js" in result.output
    )
    assert "not installed" not in result.output
