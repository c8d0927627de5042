"""`wizard run --preview`, then `wizard apply` or `wizard discard`, on the real engines.

The project must be untouched by a preview, byte for byte with modes and times; applying it
must give the tree a normal run of the same script gives; apply refuses over the user's edits;
undo takes an apply back; `--patch-out` applies with `git apply` on a clean copy.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.integrations import email_app, email_sent, stripe_app
from tests.journal.trees import state
from tests.scenarios.conftest import ci_lines, wizard_env
from wizard.testing.cli import run_wizard
from wizard.testing.script import call, reply
from wizard.testing.trees import tree_hash

pytestmark = pytest.mark.live

SKILL = ".claude/skills/transactional-email/SKILL.md"
EDIT = {"path": "src/mailer.py", "edits": [{"oldText": "print(text)", "newText": "api(text)"}]}
# The agent's work: a new file, an edit, a binary file and a removal by a command, a key in
# `.env`, and a command that tries to change the dependency folder (it must fail, and say why).
# A script the agent writes and runs: a binary file, a removal, a mode change.
SCRIPT = (
    "import os\nopen('logo.bin', 'wb').write(bytes([0, 1, 255]))\nos.remove('old.txt')\n"
    "os.chmod('run.sh', 0o700)\nos.remove('mkbin.py')\n"
)
DONE = {"blocks": [{"text": "Done."}]}
# revenue-analytics, set up: its proof finds every checkout call tagged with the person.
TAGGED = (
    "import stripe\n\n\ndef checkout(user):\n"
    "    return stripe.checkout.Session.create(metadata={'posthog_person_distinct_id': user})\n"
)
WORK = [
    reply(call("read", path=SKILL)),
    reply(call("write", path="src/posthog_email.py", content="def api(text):\n    ...\n")),
    reply(call("edit", **EDIT)),
    reply(call("write", path="mkbin.py", content=SCRIPT)),
    reply(call("bash", command="python3 mkbin.py")),
    reply(call("set_env_values", filePath=".env", values={"POSTHOG_KEY": "phc_test"})),
    reply(call("bash", command="touch node_modules/left-pad/hacked.js")),
    reply(*email_sent()),
    DONE,
    {"blocks": [{"text": "[WIZARD-REMARK] -"}]},
]


def _project(root: Path) -> Path:
    project = root / "project"
    (project / "src").mkdir(parents=True)
    (project / "app.py").write_text("from mailer import send\nsend('hi')\n")
    (project / "src" / "mailer.py").write_text("def send(text):\n    print(text)\n")
    (project / "run.sh").write_text("#!/bin/sh\necho run\n")
    (project / "run.sh").chmod(0o750)
    (project / "old.txt").write_text("to be removed\n")
    (project / ".env").write_text("EXISTING=1\n")
    (project / "node_modules" / "left-pad").mkdir(parents=True)
    (project / "node_modules" / "left-pad" / "index.js").write_text("module.exports = 1\n")
    return stripe_app(email_app(project))


def _wizard(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_wizard(*args, env=wizard_env(tmp_path, **env))


def _files(project: Path) -> dict[str, Any]:
    return {k: v for k, v in state(project).items() if not k.startswith("node_modules")}


def _as_git_sees(project: Path) -> dict[str, Any]:
    return {k: (kind, data, bool(mode & 0o100)) for k, (kind, data, mode) in _files(project).items()
            if k != ".env"}  # fmt: skip


def test_a_preview_leaves_the_project_untouched_and_apply_gives_the_run_tree(
    tmp_path: Path, gateway_process: Any
) -> None:
    previewed, normal = _project(tmp_path / "a"), _project(tmp_path / "b")
    original, untouched = _files(previewed), tree_hash(previewed)

    url, _ = gateway_process({"responses": WORK})
    run = _wizard(tmp_path, "run", "transactional-email", "--project", str(previewed), "--ci",
                  "--preview", WIZARD_GATEWAY_URL=url)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert tree_hash(previewed) == untouched, "the preview changed the project"
    outcome = ci_lines(run.stdout)[-1]
    assert outcome["preview"] is True and outcome["status"] == "succeeded"
    assert outcome["outro"]["message"].startswith("Preview ready")
    assert "set up" not in outcome["outro"]["message"]
    stops = [line["message"] for line in ci_lines(run.stdout) if line["event"] == "spinner_stopped"]
    assert stops and not any("set up" in stop for stop in stops), stops
    assert {"src/posthog_email.py", "logo.bin", "old.txt", ".env", "run.sh"} <= set(
        outcome["changed_files"]
    )
    # The command on the dependency folder failed, and the model was told why.
    (run_log,) = (tmp_path / "logs").glob("*.jsonl")
    failed = [line for line in run_log.read_text().splitlines() if "hacked.js" in line][-1]
    assert "Read-only file system" in failed and "shown read-only" in failed
    assert not (previewed / "node_modules" / "left-pad" / "hacked.js").exists()

    listed = json.loads(_wizard(tmp_path, "runs", "--project", str(previewed), "--json").stdout)
    assert [(r["kind"], r["preview_state"]) for r in listed] == [("preview", "pending")]
    shown = _wizard(tmp_path, "diff", outcome["run_id"], "--project", str(previewed))
    assert "+    api(text)" in shown.stdout

    url, _ = gateway_process({"responses": WORK})
    done = _wizard(tmp_path, "run", "transactional-email", "--project", str(normal), "--ci",
                   WIZARD_GATEWAY_URL=url)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]

    applied = _wizard(tmp_path, "apply", outcome["run_id"], "--project", str(previewed))
    assert applied.returncode == 0, applied.stderr
    assert _files(previewed) == _files(normal)
    assert _files(previewed) != original
    listed = json.loads(_wizard(tmp_path, "runs", "--project", str(previewed), "--json").stdout)
    assert listed[1]["preview_state"] == "applied" and listed[0]["applies"] == outcome["run_id"]

    undone = _wizard(tmp_path, "undo", "--project", str(previewed))
    assert undone.returncode == 0, undone.stderr
    assert _files(previewed) == original


def test_apply_refuses_a_conflicting_edit_and_the_patch_applies_on_a_clean_copy(
    tmp_path: Path, gateway_process: Any
) -> None:
    project = _project(tmp_path)
    clean = tmp_path / "clean"
    shutil.copytree(project, clean, symlinks=True)
    url, _ = gateway_process({"responses": WORK})
    patch = tmp_path / "change.patch"
    run = _wizard(tmp_path, "run", "transactional-email", "--project", str(project), "--ci",
                  "--preview", "--patch-out", str(patch), WIZARD_GATEWAY_URL=url)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    outcome = ci_lines(run.stdout)[-1]
    assert any(".env" in warning for warning in outcome["warnings"])
    assert "GIT binary patch" in patch.read_text() and "phc_test" not in patch.read_text()

    (project / "src" / "mailer.py").write_text("def send(text):\n    log(text)\n")  # the user's
    refused = _wizard(tmp_path, "apply", "--project", str(project))
    assert refused.returncode == 1
    assert "src/mailer.py" in refused.stderr and "--force" in refused.stderr
    assert (project / "src" / "mailer.py").read_text() == "def send(text):\n    log(text)\n"
    assert not (project / "logo.bin").exists(), "a refused apply changed the project"

    forced = _wizard(tmp_path, "apply", "--project", str(project), "--force")
    assert forced.returncode == 0, forced.stderr
    git = subprocess.run(["git", "apply", "--binary", str(patch)], cwd=clean,
                         capture_output=True, text=True, check=False)  # fmt: skip
    assert git.returncode == 0, git.stderr
    # A patch carries what git does: content, links and the executable bit (not 0o700 vs 0o750).
    assert _as_git_sees(clean) == _as_git_sees(project)


@pytest.mark.parametrize(
    ("harness", "sequence"),
    [("pi", "orchestrator"), ("anthropic", "linear"), ("anthropic", "orchestrator")],
)
def test_a_preview_on_each_harness_and_sequence(
    tmp_path: Path, gateway_process: Any, harness: str, sequence: str
) -> None:
    prefix = "mcp__wizard__" if harness == "anthropic" else ""
    write = call(f"{prefix}write", path="billing.py", content=TAGGED)
    if sequence == "linear":
        script: dict[str, Any] = {"responses": [reply(write), DONE, DONE]}
    else:
        enqueue = call(f"{prefix}enqueue_task", type="tag-customers", label="Tag", id="tag")
        done = call(f"{prefix}complete_task", status="done", summary="tagged")
        script = {
            "conversations": [
                {"match": "# Plan the setup", "responses": [reply(enqueue), DONE]},
                {"match": "# Task tag:", "responses": [reply(write), reply(done)]},
            ]
        }
    project = _project(tmp_path)
    untouched = tree_hash(project)
    url, _ = gateway_process(script)
    run = _wizard(tmp_path, "run", "revenue-analytics", "--project", str(project), "--ci",
                  "--preview", "--harness", harness, "--sequence", sequence,
                  WIZARD_GATEWAY_URL=url)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert tree_hash(project) == untouched
    outcome = ci_lines(run.stdout)[-1]
    assert (outcome["harness"], outcome["sequence"], outcome["preview"]) == (
        harness,
        sequence,
        True,
    )
    assert "billing.py" in outcome["changed_files"]
    stops = [line["message"] for line in ci_lines(run.stdout) if line["event"] == "spinner_stopped"]
    assert not any("set up" in stop for stop in stops), stops
    applied = _wizard(tmp_path, "apply", "--project", str(project))
    assert applied.returncode == 0, applied.stderr
    assert (project / "billing.py").read_text() == TAGGED
