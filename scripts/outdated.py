"""What wizard depends on that has a newer release than the one it runs on: for a scheduled
check (a weekly cron job, or by hand before a release). Usage, from the checkout:

    .venv/bin/python scripts/outdated.py [--json FILE]

Three kinds of dependency, each compared with its registry (PyPI, npm):

- the Python packages `pyproject.toml` names, as `.venv` holds them (pip installed the newest
  each range allows, so a package listed here is held back by its range or by another
  package's), and the ones pinned exactly (the Claude Agent SDK);
- the engine bundle's npm packages, pinned in `engine_lock/package.json` (pi and the
  sandbox runtime), and pi's maintained package, when wizard still pins another;
- the lowest release each Python range allows, as uv resolves it (`--resolution
  lowest-direct`), where that is higher than the range's floor: a floor that cannot be
  installed is not one the suite runs on.

Exits 1 when anything is behind, so that a scheduled run says so; 0 otherwise. Reaches the
registries: never part of the test command.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PYTHON = ROOT / ".venv" / "bin" / "python"
LOCK = ROOT / "src" / "wizard" / "engines" / "engine_lock" / "package.json"


def _names(requirements: list[str]) -> dict[str, str]:
    """Package name (normalized) → its requirement as written."""
    found = {}
    for requirement in requirements:
        name = re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0]
        found[name.lower().replace("_", "-")] = requirement
    return found


def python_behind() -> list[dict[str, str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = _names(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        wanted |= _names(extra)
    listed = subprocess.run(
        [str(PYTHON), "-m", "pip", "list", "--outdated", "--format=json"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return [
        {"kind": "python", "name": item["name"], "runs": item["version"],
         "newest": item["latest_version"], "range": wanted[key]}
        for item in json.loads(listed)
        if (key := item["name"].lower().replace("_", "-")) in wanted
    ]  # fmt: skip


def _npm_newest(package: str) -> str:
    done = subprocess.run(["npm", "view", package, "version"], capture_output=True, text=True,
                          check=True)  # fmt: skip
    return done.stdout.strip()


def engine_behind() -> list[dict[str, str]]:
    pinned = json.loads(LOCK.read_text())["dependencies"]
    behind = []
    for package, version in pinned.items():
        newest = _npm_newest(package)
        if newest != version:
            behind.append({"kind": "engine", "name": package, "runs": version,
                           "newest": newest, "range": f"=={version}"})  # fmt: skip
    return behind


def floors_unreachable() -> list[dict[str, str]]:
    """The ranges whose floor no install can have (uv's lowest resolution lands above it)."""
    done = subprocess.run(
        [str(PYTHON), "-m", "uv", "pip", "compile", "--quiet", "--resolution", "lowest-direct",
         "--all-extras", str(ROOT / "pyproject.toml")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        return [{"kind": "floor", "name": "(uv)", "runs": "", "newest": "",
                 "range": done.stderr.strip()[-300:] or "uv is not installed"}]  # fmt: skip
    lowest = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", done.stdout, re.MULTILINE))
    lowest = {name.lower().replace("_", "-"): version for name, version in lowest.items()}
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    unreachable = []
    for key, requirement in _names(project["dependencies"]).items():
        floor = re.search(r">=\s*([0-9][^,; ]*)", requirement)
        if floor and key in lowest and Version(lowest[key]) != Version(floor.group(1)):
            unreachable.append({"kind": "floor", "name": key, "runs": lowest[key],
                                "newest": "", "range": requirement})  # fmt: skip
    return unreachable


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = python_behind() + engine_behind() + floors_unreachable()
    for row in rows:
        if row["kind"] == "floor":
            print(f"floor   {row['name']:<32} {row['range']}: the lowest install is "
                  f"{row['runs']}")  # fmt: skip
        else:
            print(f"{row['kind']:<7} {row['name']:<32} {row['runs']} → {row['newest']} "
                  f"({row['range']})")  # fmt: skip
    if not rows:
        print("nothing is behind")
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 1 if rows else 0


if __name__ == "__main__":
    sys.exit(main())
