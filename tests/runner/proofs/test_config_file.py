"""The self-driving proof: the config file validates, its goals are what the user answered
to `wizard_ask` in this run (a run no one could answer has none, unless the program declares
defaults), and its repository is one of the project's git remotes."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from wizard.programs.registry import get_program
from wizard.programs.types import ConfigProof
from wizard.runner.proofs.codebase import Codebase
from wizard.runner.proofs.repository import same_repository
from wizard.runner.proofs.static import config_file

(PROOF,) = get_program("self-driving").proofs
assert isinstance(PROOF, ConfigProof)
ANSWERS = (("Which product goals should Self-driving work toward?",
            "Grow weekly signups, and cut checkout drop-off"),)  # fmt: skip


def _project(tmp_path: Path, config: object, remote: str | None = None) -> Codebase:
    project = tmp_path / "app"
    project.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    if remote is not None:
        subprocess.run(["git", "-C", str(project), "remote", "add", "origin", remote], check=True)
    (project / ".posthog").mkdir()
    text = config if isinstance(config, str) else json.dumps(config)
    (project / ".posthog" / "self-driving.json").write_text(text)
    return Codebase(project)


GOOD = {"goals": ["Grow weekly signups"], "repository": "github.com/acme/app"}


def test_goals_the_user_gave_for_the_projects_remote_are_proven(tmp_path: Path) -> None:
    code = _project(tmp_path, GOOD, "git@github.com:acme/app.git")
    found = config_file(code, PROOF, ANSWERS, interactive=True)
    assert found.status == "proven", found.text
    assert "goals are what the user answered" in found.text
    assert "repository is the project's remote" in found.text


@pytest.mark.parametrize(
    ("config", "answers", "interactive", "reason"),
    [
        # Written without asking, in a run no one could answer (`--ci`).
        (GOOD, (), False, "the goals were never asked for (no one could answer"),
        # Asked, but the file holds goals the user never gave.
        ({**GOOD, "goals": ["Maximise revenue"]}, ANSWERS, True,
         "'Maximise revenue' is not among the user's answers"),
        ({**GOOD, "goals": []}, ANSWERS, True, "at goals:"),
        ("{goals", ANSWERS, True, "is not JSON"),
    ],
)  # fmt: skip
def test_goals_not_from_this_runs_answers_fail(
    tmp_path: Path, config: object, answers: tuple[tuple[str, str], ...], interactive: bool,
    reason: str,
) -> None:  # fmt: skip
    code = _project(tmp_path, config, "https://github.com/acme/app.git")
    found = config_file(code, PROOF, answers, interactive)
    assert found.status == "failed" and reason in found.text, found.text


def test_a_repository_the_project_does_not_have_fails(tmp_path: Path) -> None:
    found = config_file(_project(tmp_path / "a", GOOD, "https://github.com/acme/other"), PROOF,
                        ANSWERS, True)  # fmt: skip
    assert found.status == "failed" and "is not a git remote of the project" in found.text
    found = config_file(_project(tmp_path / "b", GOOD), PROOF, ANSWERS, True)
    assert found.status == "failed" and "(its remotes: none)" in found.text


def test_a_remote_with_a_token_in_it_is_never_shown(tmp_path: Path) -> None:
    remote = "https://x-access-token:ghp_canary123@github.com/acme/other.git"
    found = config_file(_project(tmp_path, GOOD, remote), PROOF, ANSWERS, True)
    assert found.status == "failed" and "ghp_canary123" not in found.text
    assert "https://***@github.com/acme/other.git" in found.text


def test_a_git_file_that_is_a_pipe_is_not_read(tmp_path: Path) -> None:
    """A `.git` that is a pipe would block a plain read forever: it is no repository."""
    import os

    project = tmp_path / "app"
    project.mkdir()
    os.mkfifo(project / ".git")
    (project / ".posthog").mkdir()
    (project / ".posthog" / "self-driving.json").write_text(json.dumps(GOOD))
    found = config_file(Codebase(project), PROOF, ANSWERS, True)
    assert found.status == "failed" and "(its remotes: none)" in found.text


def test_declared_defaults_stand_in_for_answers_when_no_one_can_answer(tmp_path: Path) -> None:
    proof = replace(PROOF, defaults={"goals": ["Grow weekly signups"]})
    code = _project(tmp_path, GOOD, "https://github.com/acme/app")
    assert config_file(code, proof, (), interactive=False).status == "proven"
    other = {**GOOD, "goals": ["Something else"]}
    (code.root / ".posthog" / "self-driving.json").write_text(json.dumps(other))
    assert config_file(code, proof, (), interactive=False).status == "failed"


def test_a_missing_file_fails(tmp_path: Path) -> None:
    code = _project(tmp_path, GOOD)
    (code.root / ".posthog" / "self-driving.json").unlink()
    assert config_file(code, PROOF).text == ".posthog/self-driving.json was not written"


@pytest.mark.parametrize(
    ("named", "remote", "same"),
    [
        ("github.com/acme/app", "git@github.com:acme/app.git", True),
        ("acme/app", "https://x-token:ghp_abc@github.com/acme/app.git", True),
        ("https://github.com/acme/app", "ssh://git@github.com:22/acme/app", True),
        ("github.com/acme/app", "https://github.com/acme/app-two", False),
        ("app", "https://github.com/acme/app", False),
        ("", "https://github.com/acme/app", False),
    ],
)
def test_repositories_are_compared_by_host_owner_and_name(
    named: str, remote: str, same: bool
) -> None:
    assert same_repository(named, remote) is same
