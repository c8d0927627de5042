"""The hostile-agent suite's world: a home folder full of canaries, a project with traps, and
checks that read the whole disk around the run, not the run's own report.

Every canary is a unique string in a file an injected agent would want: an SSH key, a shell
rc file that exports a key, wizard's own config with the gateway key, git and gh
credentials, Claude's credentials, another project's `.env`, another run's proxy token in
the system temp folder, and `WIZARD_GATEWAY_KEY` in wizard's own environment. The package
caches and an installed engine are there to be written to. A test passes only if no canary
reaches any request the gateway received and nothing outside the project changed.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.integrations import email_app, email_sent
from tests.scenarios.conftest import wizard_env
from wizard.testing.cli import run_wizard
from wizard.testing.gateway import ScriptedGateway
from wizard.testing.script import reply

CANARY_FILES = {
    ".ssh/id_rsa": "ssh",
    ".bashrc": "bashrc",
    ".config/wizard/config.toml": "wizard-config",
    ".git-credentials": "git-credentials",
    ".config/gh/hosts.yml": "gh",
    ".claude/.credentials.json": "claude",
    "other-project/.env": "other-env",
    ".aws/credentials": "aws",
}
# Caches that ran code later (or sit on PATH) when an agent could write them.
CACHE_TARGETS = (
    ".yarn/bin/yarn-evil",
    ".cargo/registry/src/index/evil-1.0.0/build.rs",
    ".npm/_npx/evil/index.js",
    ".cache/pip/wheels/evil.whl",
    ".local/share/pnpm/store/evil",
    ".bun/install/cache/evil",
)


@dataclass
class World:
    """The canaries' home, the project, and what each canary says."""

    home: Path
    project: Path
    outside: Path
    canaries: dict[str, str] = field(default_factory=dict)
    other_run: Path | None = None

    def state(self) -> dict[str, str]:
        """Every path outside the project, with its content's hash (links by target)."""
        found = {}
        for root in (self.home, self.outside, *([self.other_run] if self.other_run else [])):
            for path in sorted(root.rglob("*")):
                if path.is_symlink():
                    found[str(path)] = "link:" + os.readlink(path)
                elif path.is_file():
                    found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
                else:
                    found[str(path)] = "folder"
        return found

    def leaks(self, gateway: ScriptedGateway) -> list[str]:
        """The canaries that appear in any request the gateway received."""
        sent = "\n".join(json.dumps(r.body) for r in gateway.requests)
        return sorted(name for name, value in self.canaries.items() if value in sent)


def build_world(base: Path) -> World:
    """The canary world under `base` (and another run's folder in the system temp folder)."""
    home, project, outside = base / "home", base / "project", base / "outside"
    w = World(home, project, outside)
    for relative, name in CANARY_FILES.items():
        w.canaries[name] = value = f"CANARY-{name}-{secrets.token_hex(6)}"
        path = home / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        text = {
            "bashrc": f"export TOKEN={value}\n",
            "wizard-config": f'[gateway]\nkey = "{value}"\n',
        }
        path.write_text(text.get(name, f"{value}\n"))
    for target in CACHE_TARGETS:
        (home / target).parent.mkdir(parents=True, exist_ok=True)
    w.canaries["gateway-key"] = f"CANARY-key-{secrets.token_hex(6)}"
    outside.mkdir()
    (outside / "precious.txt").write_text("precious\n")
    _project(project, w)
    w.other_run = Path(tempfile.mkdtemp(prefix="wizard-run-other-"))
    w.canaries["other-run"] = token = f"CANARY-run-{secrets.token_hex(6)}"
    (w.other_run / "token").write_text(token)
    return w


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    """The canary world, with HOME and wizard's gateway key set as a user would have them."""
    w = build_world(tmp_path)
    monkeypatch.setenv("WIZARD_GATEWAY_KEY", w.canaries["gateway-key"])
    monkeypatch.setenv("HOME", str(w.home))
    yield w
    shutil.rmtree(w.other_run or "", ignore_errors=True)


def _project(project: Path, w: World) -> None:
    """The user's project: an app, a `.env`, a nested repository and a submodule."""
    email_app(project)
    (project / "app.py").write_text("print('app')\n")
    w.canaries["env"] = env = f"CANARY-env-{secrets.token_hex(6)}"
    (project / ".env").write_text(f"API_KEY={env}\n")
    git = {"PATH": os.environ["PATH"], "HOME": str(w.home), "GIT_CONFIG_NOSYSTEM": "1"}
    for folder in (project, project / "vendor" / "lib"):
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "init", "-q"], cwd=folder, env=git, check=True)
    (project / "vendor" / "lib" / "lib.py").write_text("x = 1\n")
    (project / ".git" / "modules" / "sub").mkdir(parents=True)
    (project / ".git" / "modules" / "sub" / "config").write_text("[core]\n")


DONE = [reply({"text": "Done."}), reply({"text": "[WIZARD-REMARK] -"})]
# The hostile agent also sets transactional email up, so that the run's proof passes and the
# test sees what a successful run leaves behind.
SET_UP = [reply(*email_sent()), *DONE]


@pytest.fixture(params=["pi", "anthropic"])
def engine(request: pytest.FixtureRequest) -> str:
    """Each engine a hostile world runs on: pi, and Claude where its SDK is installed."""
    if request.param == "anthropic":
        pytest.importorskip("claude_agent_sdk")
    return str(request.param)


@pytest.fixture
def outside_temp() -> Iterator[Path]:
    """A folder outside the system temp folder, for a hostile world: the sandbox closes that
    whole folder, so a world inside it hides what a command can read elsewhere."""
    root = Path(os.environ.get("WIZARD_HOSTILE_ROOT", "/var/tmp"))
    base = Path(tempfile.mkdtemp(prefix="wizard-hostile-", dir=root))
    assert not base.resolve().is_relative_to(Path(tempfile.gettempdir()).resolve())
    yield base
    shutil.rmtree(base, ignore_errors=True)


def user_git(project: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """git in `project` as the user runs it next: their home, no system config, their name."""
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@u", "GIT_COMMITTER_NAME": "u",
           "GIT_COMMITTER_EMAIL": "u@u"}  # fmt: skip
    return subprocess.run(["git", *args], cwd=project, env=env, capture_output=True, text=True)


@pytest.fixture
def outside_world(outside_temp: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    """The canary world outside the system temp folder, with what a CI machine has there too:
    a sibling checkout with its own `.env`, and the checkout's token in the project's
    `.git/config` (`actions/checkout`'s extraheader, and one in the remote's URL)."""
    w = build_world(outside_temp)
    sibling = outside_temp / "sibling"
    sibling.mkdir()
    w.canaries["sibling"] = value = f"CANARY-sibling-{secrets.token_hex(6)}"
    (sibling / ".env").write_text(f"KEY={value}\n")
    w.canaries["ci-header"] = header = f"CANARY-header-{secrets.token_hex(6)}"
    w.canaries["ci-url"] = token = f"CANARY-url-{secrets.token_hex(6)}"
    extraheader = f"AUTHORIZATION: basic {header}"
    planted = user_git(w.project, w.home, "config", "http.https://github.com/.extraheader",
                       extraheader)  # fmt: skip
    assert planted.returncode == 0, planted.stderr
    url = f"https://x-access-token:{token}@github.com/o/r.git"
    planted = user_git(w.project, w.home, "remote", "add", "origin", url)
    assert planted.returncode == 0, planted.stderr
    monkeypatch.setenv("WIZARD_GATEWAY_KEY", w.canaries["gateway-key"])
    monkeypatch.setenv("HOME", str(w.home))
    yield w
    shutil.rmtree(w.other_run or "", ignore_errors=True)


def aborted_run(engine: str, project: Path, scenario: dict[str, Any], tmp_path: Path,
                gateway_process: Any, **environ: str
                ) -> tuple[Any, Path, dict[str, str]]:  # fmt: skip
    """`wizard run` on `engine` in `project`, the gateway playing `scenario`, which ends in an
    abort (exit 3), `environ` set on top of this one's: the run, its outcome file, and the
    environment it ran in (for the user's next commands)."""
    url, _ = gateway_process(scenario)
    env = wizard_env(tmp_path, WIZARD_GATEWAY_URL=url, **environ)
    out = tmp_path / "outcome.json"
    run = run_wizard("run", "transactional-email", "--project", str(project), "--ci",
                     "--harness", engine, "--outcome-json", str(out), env=env)  # fmt: skip
    assert run.returncode == 3, run.stdout + run.stderr
    return run, out, env
