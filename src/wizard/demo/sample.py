"""Setting up the offline demo: a copy of the sample project and a recorded transcript.

The model is scripted: the scripted gateway serves the transcript over real HTTP on
127.0.0.1, while the pi engine, the host tools and the file edits are real.
"""

from __future__ import annotations

import difflib
import shutil
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from wizard.errors import UsageError
from wizard.programs.registry import did_you_mean

DEMO_PROGRAM = "transactional-email"
DEMO_MODEL = "scripted-demo-model"
SCENARIOS = ("success", "skill-abort", "gateway-refusal", "broken-build")
_ENV = {
    "success": "SECRET_KEY=demo-only\nPOSTHOG_EMAIL_API_KEY=phx_demo_key_not_real\n",
    "skill-abort": "SECRET_KEY=demo-only\n",
    "gateway-refusal": "SECRET_KEY=demo-only\nPOSTHOG_EMAIL_API_KEY=phx_demo_key_not_real\n",
    "broken-build": "SECRET_KEY=demo-only\nPOSTHOG_EMAIL_API_KEY=phx_demo_key_not_real\n",
}
_IGNORED = (".claude",)


@dataclass(frozen=True)
class DemoSetup:
    """A prepared demo: the project the agent edits, a pristine copy, and the transcript."""

    scenario: str
    project: Path
    pristine: Path
    transcript: Path


def _data(name: str) -> Path:
    return Path(str(resources.files("wizard.demo") / name))


def prepare_demo(scenario: str, workdir: Path) -> DemoSetup:
    """Copy the sample project into `workdir` for `scenario`."""
    if scenario not in SCENARIOS:
        raise UsageError(
            f"Unknown demo scenario '{scenario}'.", did_you_mean(scenario, list(SCENARIOS))
        )
    project, pristine = workdir / "sample-app", workdir / "pristine"
    for target in (project, pristine):
        shutil.copytree(
            _data("sample_project"), target, ignore=shutil.ignore_patterns("__pycache__")
        )
        (target / ".env").write_text(_ENV[scenario])
    return DemoSetup(scenario, project, pristine, _data("scenarios") / f"{scenario}.json")


def _text_files(root: Path) -> dict[str, list[str]]:
    files = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if (
            path.is_file()
            and relative.parts[0] not in _IGNORED
            and not path.name.startswith(".env")
        ):
            try:
                files[str(relative)] = path.read_text().splitlines(keepends=True)
            except UnicodeDecodeError:
                continue
    return files


def project_diff(before: Path, after: Path) -> str:
    """A unified diff of what changed between two copies of a project (skills left out)."""
    old, new = _text_files(before), _text_files(after)
    chunks: list[str] = []
    for name in sorted(old.keys() | new.keys()):
        chunks.extend(
            difflib.unified_diff(
                old.get(name, []),
                new.get(name, []),
                fromfile=f"a/{name}" if name in old else "/dev/null",
                tofile=f"b/{name}" if name in new else "/dev/null",
            )
        )
    return "".join(chunks)
