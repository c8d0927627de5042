"""`wizard fleet`'s refusals: before any server starts, in wizard's words, exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from wizard.testing.cli import run_wizard, wizard_env


@pytest.fixture
def repos_file(tmp_path: Path) -> Path:
    repo = tmp_path / "app"
    repo.mkdir()
    subprocess.run(["git", "init", "--quiet", str(repo)], check=True)
    listing = tmp_path / "repos.txt"
    listing.write_text("app\n")
    return listing


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["nope"], "nope"),
        (["revenue-analytics", "--publish", "pr"], "--publish 'pr' is not a way to publish"),
        (["revenue-analytics", "--rate", "fast"], "--rate 'fast' is not a pace"),
        (["revenue-analytics", "--verify", "most"], "--verify 'most' is not a level"),
        (["revenue-analytics", "--harness", "codex"], "Unknown harness 'codex'"),
        (["revenue-analytics", "--temporal", "no port"], "is not HOST:PORT"),
        (["revenue-analytics", "--max-time", "soon"], "--max-time"),
        (["revenue-analytics", "--run-max-cost", "0"], "must be above 0"),
        (["revenue-analytics", "--fleet", "../up"], "--fleet '../up' is not a fleet id"),
    ],
)
def test_bad_flags_are_refused_before_anything_starts(
    tmp_path: Path, repos_file: Path, args: list[str], said: str
) -> None:
    env = wizard_env(tmp_path, WIZARD_GATEWAY_URL="http://127.0.0.1:9",
                     WIZARD_STATE_DIR=str(tmp_path / "state"))  # fmt: skip
    done = run_wizard("fleet", "run", *args[:1], "--repos", str(repos_file), *args[1:], env=env)
    assert done.returncode == 2, done.stderr
    assert said in done.stderr
    assert not (tmp_path / "state" / "fleet").exists()  # no server was started


@pytest.mark.parametrize(
    ("settings", "said"),
    [
        ({}, "cannot tell which forge"),
        ({"WIZARD_FORGE": "github"}, "set WIZARD_FORGE_API"),
        ({"WIZARD_FORGE": "gitlab", "WIZARD_FORGE_API": "http://127.0.0.1:9"},
         "no token for gitlab: set GITLAB_TOKEN or GL_TOKEN"),
        ({"WIZARD_FORGE": "github", "WIZARD_FORGE_API": "http://forge.example/api",
          "GITHUB_TOKEN": "t"}, "not HTTPS"),
    ],
)  # fmt: skip
def test_pull_requests_need_a_forge_and_a_token_before_anything_starts(
    tmp_path: Path, repos_file: Path, settings: dict[str, str], said: str
) -> None:
    env = wizard_env(tmp_path, WIZARD_GATEWAY_URL="http://127.0.0.1:9",
                     WIZARD_STATE_DIR=str(tmp_path / "state"), **settings)  # fmt: skip
    for name in ("GITHUB_TOKEN", "GH_TOKEN", "GITLAB_TOKEN", "GL_TOKEN"):
        if name not in settings:
            env.pop(name, None)
    done = run_wizard("fleet", "run", "revenue-analytics", "--repos", str(repos_file),
                      "--publish", "pull-request", env=env)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert said in done.stderr and "GITHUB_TOKEN or GITLAB_TOKEN" in done.stderr
    assert not (tmp_path / "state" / "fleet").exists()  # no server was started


def test_no_gateway_and_a_bad_repositories_file_name_their_fix(
    tmp_path: Path, repos_file: Path
) -> None:
    env = wizard_env(tmp_path, WIZARD_STATE_DIR=str(tmp_path / "state"))
    done = run_wizard("fleet", "run", "revenue-analytics", "--repos", str(repos_file), env=env)
    assert done.returncode == 2 and "No model gateway is configured" in done.stderr
    worker = run_wizard("fleet", "worker", env=env)
    assert worker.returncode == 2 and "WIZARD_GATEWAY_URL" in worker.stderr
    repos_file.write_text("app\nmissing\n")
    env["WIZARD_GATEWAY_URL"] = "http://127.0.0.1:9"
    done = run_wizard("fleet", "run", "revenue-analytics", "--repos", str(repos_file), env=env)
    assert done.returncode == 2 and "line 2" in done.stderr and "does not exist" in done.stderr


def test_the_fleet_commands_are_listed_and_stopping_no_server_says_so(tmp_path: Path) -> None:
    env = wizard_env(tmp_path, WIZARD_STATE_DIR=str(tmp_path / "state"))
    listed = run_wizard("fleet", "--help", env=env)
    assert all(name in listed.stdout for name in ("run", "worker", "status", "cancel", "server"))
    done = run_wizard("fleet", "server", "stop", env=env)
    assert done.returncode == 0 and "not running" in done.stdout


def test_ctrl_c_stops_following_and_the_fleet_goes_on(tmp_path: Path, repos_file: Path) -> None:
    """Ctrl-C on `wizard fleet run`: exit 130, saying the fleet goes on at Temporal and how
    to join it again or cancel it; `wizard fleet status` then shows it, and cancel stops it."""
    import signal

    from wizard.fleet.server import stop_server

    env = wizard_env(tmp_path, WIZARD_GATEWAY_URL="http://127.0.0.1:9",
                     WIZARD_STATE_DIR=str(tmp_path / "state"))  # fmt: skip
    command = [sys.executable, "-m", "wizard", "fleet", "run", "revenue-analytics", "--repos",
               str(repos_file), "--no-worker", "--fleet", "interrupted"]  # fmt: skip
    try:
        process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)  # fmt: skip
        assert process.stderr is not None
        assert process.stderr.readline().startswith("Started fleet interrupted")
        process.send_signal(signal.SIGINT)
        shown, errors = process.communicate(timeout=30)
        assert process.returncode == 130
        assert "it goes on at Temporal" in errors and "wizard fleet cancel interrupted" in errors
        # The fleet's own screen only: no run's "nothing ran" box for a program of no name.
        assert "Interrupted before the run started" not in shown + errors, shown
        status = run_wizard("fleet", "status", "interrupted", "--json", env=env)
        assert json.loads(status.stdout)["finished"] is False
        assert run_wizard("fleet", "cancel", "interrupted", env=env).returncode == 0
    finally:
        stop_server(tmp_path / "state" / "fleet")


def test_without_temporal_installed_the_fleet_names_its_install(
    tmp_path: Path, repos_file: Path
) -> None:
    blocked = tmp_path / "blocked" / "temporalio"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text("raise ImportError('No module named temporalio')\n")
    env = wizard_env(tmp_path, WIZARD_GATEWAY_URL="http://127.0.0.1:9",
                     PYTHONPATH=str(blocked.parent))  # fmt: skip
    for args in (["run", "revenue-analytics", "--repos", str(repos_file)], ["status"]):
        done = run_wizard("fleet", *args, env=env)
        assert done.returncode == 2
        assert "pip install 'wizard[fleet]'" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("command", [["status"], ["cancel", "some-fleet"]])
def test_reading_or_stopping_fleets_never_starts_a_server(
    tmp_path: Path, command: list[str]
) -> None:
    env = wizard_env(tmp_path, WIZARD_STATE_DIR=str(tmp_path / "state"))
    done = run_wizard("fleet", *command, env=env)
    assert done.returncode == 2, done.stderr
    assert "The embedded Temporal server is not running" in done.stderr
    assert not (tmp_path / "state" / "fleet").exists()
