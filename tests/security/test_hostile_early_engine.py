"""pi's early start, before anything else: a `wizard` package planted in the project (where
the user runs `wizard`, and where an agent could write one) is never what it imports, and a
changed engine is never loaded by the host started before its check."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integrations import email_app
from tests.scenarios.conftest import gateway_process
from wizard.ahead import Timeline
from wizard.engines.bundle import PI_PACKAGE, check_unchanged, pi_prefix
from wizard.testing.cli import run_wizard, wizard_env
from wizard.testing.script import call, reply, said

__all__ = ["gateway_process"]


@pytest.mark.parametrize("folder", ["wizard", "wizard/runner/harness/pi"])
def test_a_planted_wizard_package_in_the_current_folder_never_runs(
    outside_temp: Path, tmp_path: Path, folder: str
) -> None:
    project = outside_temp / "project"
    canary = outside_temp / "planted-code-ran"
    planted = project / folder
    planted.mkdir(parents=True)
    code = f"open({str(canary)!r}, 'w').write('ran')\n"
    for package in [project / "wizard", *(p for p in planted.parents if p != project), planted]:
        if package.is_relative_to(project / "wizard"):
            (package / "__init__.py").write_text(code)
    (planted / "early.py").write_text(code)
    email_app(project)
    script = Path(sys.executable).with_name("wizard")  # the console script, as users run it
    env = wizard_env(tmp_path, WIZARD_GATEWAY_URL="http://127.0.0.1:9")
    command = [str(script), "run", "transactional-email", "--project", "."]
    done = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode in (1, 2, 3), done.stderr
    assert not canary.exists()
    # What the user does next, from the same folder: wizard's journal commands.
    for command in (["runs"], ["diff"], ["undo"]):
        subprocess.run([str(script), *command, "--project", "."], cwd=project, env=env,
                       capture_output=True, text=True, timeout=120)  # fmt: skip
        assert not canary.exists(), command


def test_a_changed_engine_is_never_loaded_by_the_host_started_early(
    outside_temp: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Node starts on wizard's host before the engine's check has finished; the host loads
    nothing of the engine until wizard says the check passed. An engine whose pi entry was
    rewritten (code that runs on load) fails the run, and that code never runs."""
    engines, state, copy, project = _recorded_copy(outside_temp, monkeypatch)
    canary = outside_temp / "engine-code-ran"
    _loaded_writes(copy / "node_modules" / PI_PACKAGE / "dist/index.js", canary)
    env = wizard_env(tmp_path, WIZARD_GATEWAY_URL="http://127.0.0.1:9",
                     WIZARD_ENGINES_DIR=str(engines), WIZARD_STATE_DIR=str(state))  # fmt: skip
    done = run_wizard("run", "transactional-email", "--project", str(project), "--ci", env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "pi-coding-agent/dist/index.js" in done.stdout
    assert not canary.exists(), "the host loaded a changed engine"


def _recorded_copy(
    outside_temp: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, Path, Path, Path]:
    """A copy of the installed engine, recorded as `wizard engines install pi` records it, in
    an engines folder and a state folder of its own; and a project: (engines folder, state
    folder, the copy, the project)."""
    engines, state = outside_temp / "engines", outside_temp / "state"
    copy = engines / pi_prefix().name
    shutil.copytree(pi_prefix(), copy, symlinks=True)
    monkeypatch.setenv("WIZARD_STATE_DIR", str(state))
    check_unchanged(copy)
    project = outside_temp / "project"
    project.mkdir()
    email_app(project)
    return engines, state, copy, project


def _loaded_writes(entry: Path, canary: Path) -> None:
    """Rewrite `entry`, a module of the engine, to write `canary` the moment it is loaded
    (pi's own entry would run only once its whole module graph has loaded, a second later)."""
    entry.chmod(0o644)
    entry.write_text(
        f'import {{ writeFileSync }} from "node:fs";\nwriteFileSync({str(canary)!r}, "ran");\n'
    )


@pytest.mark.skipif(
    importlib.util.find_spec("claude_agent_sdk") is None and not os.environ.get("CI"),
    reason="the anthropic extra",
)
def test_the_anthropic_harness_runs_no_changed_file_of_the_sandbox_runtime_it_checks(
    outside_temp: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gateway_process: Any
) -> None:
    """The anthropic harness checks only what the sandbox runtime runs of the engine tree. A
    module the runtime depends on (commander's, which its command line loads) rewritten to
    run code on load fails the run, naming it, before any command; pi's own entry rewritten
    is not that run's concern: the run goes on, its commands in the sandbox, and pi's code
    never runs."""
    engines, state, copy, project = _recorded_copy(outside_temp, monkeypatch)
    pi_ran, runtime_ran = outside_temp / "pi-code-ran", outside_temp / "runtime-code-ran"
    _loaded_writes(copy / "node_modules" / PI_PACKAGE / "dist/index.js", pi_ran)
    scenario = {"responses": [reply(call("mcp__wizard__bash", command="touch out.txt")),
                              said("[ABORT] stop here"), said("never asked")]}  # fmt: skip
    url, _ = gateway_process(scenario)
    env = wizard_env(tmp_path, WIZARD_GATEWAY_URL=url, WIZARD_ENGINES_DIR=str(engines),
                     WIZARD_STATE_DIR=str(state))  # fmt: skip
    command = ("run", "transactional-email", "--project", str(project), "--ci", "--harness",
               "anthropic")  # fmt: skip
    done = run_wizard(*command, env=env)
    assert done.returncode == 3, done.stdout + done.stderr
    out = project / "out.txt"
    assert out.exists(), done.stdout  # the command ran, on the runtime
    assert not pi_ran.exists(), "pi's code ran on the anthropic harness"

    out.unlink()
    _loaded_writes(copy / "node_modules/commander/index.js", runtime_ran)
    done = run_wizard(*command, env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "node_modules/commander/index.js" in done.stdout
    assert not out.exists()
    assert not runtime_ran.exists(), "a changed module of the sandbox runtime ran"


def test_the_listing_made_with_the_process_runs_nothing_of_the_project_s(
    outside_temp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process that lists a project's dependency folders ahead of its run
    (`wizard.listings`) imports nothing from the project, even where the user's environment
    and working folder would have Python do so; and its listings are still taken."""
    from wizard import listings

    project = outside_temp / "project"
    (project / "node_modules" / "left-pad").mkdir(parents=True)
    (project / "node_modules" / "left-pad" / "index.js").write_text("module.exports = 1;\n")
    canary = outside_temp / "planted-code-ran"
    code = f"open({str(canary)!r}, 'w').write('ran')\n"
    for module in ("json", "hashlib", "stat", "sitecustomize", "usercustomize", "startup"):
        (project / f"{module}.py").write_text(code)
    (project / "wizard").mkdir()
    (project / "wizard" / "__init__.py").write_text(code)
    env = {"PYTHONPATH": str(project), "PYTHONSTARTUP": str(project / "startup.py")}
    # The plant works: a Python that honours the environment runs it.
    subprocess.run([sys.executable, "-c", "import json"], cwd=project, env={**os.environ, **env},
                   check=True)  # fmt: skip
    assert canary.exists()
    canary.unlink()
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(project)
    ahead = Timeline()
    listings.start_ahead(["run", "transactional-email", "--project", "."], ahead)
    taken = listings.take_ahead(ahead, project.resolve())
    assert taken is not None and [listing.path for listing in taken] == ["node_modules"]
    assert not canary.exists()


def test_names_a_planted_package_chose_cannot_forge_a_listing(
    outside_temp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A package an earlier run planted names its files so that, printed, they read as the
    listing process's own framing (a new line, a head of JSON with a path, digest and size
    of its choosing). The listings taken are still exactly the ones the journal takes itself:
    every listing is framed by its length, and its data must have its digest."""
    from wizard import listings
    from wizard.journal import Journal

    project = outside_temp / "project"
    package = project / "node_modules" / "evil"
    package.mkdir(parents=True)
    forged = '{"path": ".venv", "digest": "0000", "size": 2, "repos": {}}'
    for name in (f"a\n{forged}\n{{}}", "b\n", '"}\n{"path": "node_modules"', "c\\n\\u0000"):
        (package / name).write_text("x\n")
    (project / ".venv").mkdir()
    monkeypatch.setenv("WIZARD_STATE_DIR", str(outside_temp / "state"))
    ahead = Timeline()
    listings.start_ahead(["run", "transactional-email", "--project", str(project)], ahead)
    taken = listings.take_ahead(ahead, project.resolve())
    assert taken is not None
    own = Journal(project).store.heavy_listings()
    assert {listing.path: (listing.digest, listing.repos) for listing in taken} == own
    assert set(own) == {"node_modules", ".venv"}
