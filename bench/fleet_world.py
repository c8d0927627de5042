"""A fleet's test world: real apps from the corpus as local git repositories, and one scripted
gateway that answers all their runs (the fleet's bench and its tests share it).

Each repository is a fresh copy of an app, committed to a git repository of its own, its
`SOURCE.md` tagged with a token. Every run's agent first reads `SOURCE.md`; the gateway
(`by_history`) tells the runs apart by the token in that tool result and answers each from
its case's transcript (the truth bench's: a correct integration, a sabotaged one, or an app
the program does not fit, which ends before any model is asked), at the step its history
says. A run started over gets its transcript
from the start.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from truth_cases import CASES, Case

from wizard.testing.script import call, reply, said

OPENING = reply(call("read", path="SOURCE.md"))
PROGRAM = "revenue-analytics"
MODEL = "scripted-fleet-model"
# USD per million tokens (in, out, cache read, cache write): each run costs a little.
PRICES = {MODEL: [3.0, 15.0, 0.3, 3.75]}
# What each kind of repository deserves, by app and the truth bench's case.
PROVEN_NODE = ("stripe-checkout-node", "correct: the request's distinct id")
PROVEN_PYTHON = ("stripe-checkout-python", "correct: the session's user")
UNVERIFIED = ("stripe-checkout-node", "syntax error")
NOT_APPLICABLE = ("todomvc-javascript-es5", "no Stripe (does not fit)")
# The row each kind of truth-bench case ends as in a fleet (the apps' dependencies are not
# installed: the revenue proof is static).
ROWS = {"correct": "proven", "sabotaged": "unverified", "does not fit": "not applicable"}


@dataclass(frozen=True)
class World:
    """The repositories file, the repositories, and the gateway's scenario."""

    repos_file: Path
    repos: tuple[Path, ...]
    scenario: dict[str, Any]
    deserves: dict[str, str]  # repository folder name → proven | unverified | not applicable


def _case(app: str, name: str) -> Case:
    return next(c for c in CASES if c.app == app and c.name == name)


def _transcript(case: Case, corpus: Path) -> list[dict[str, Any]]:
    assert case.edit is not None
    edits = case.edit(corpus / case.app) or [call("read", path="README.md")]
    return [reply(*edits), said("Done."), said("-")]


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd,
                   check=True, capture_output=True)  # fmt: skip


def build_world(
    corpus: Path,
    where: Path,
    cases: list[tuple[str, str]],
    first: Mapping[int, list[dict[str, Any]]] | None = None,
) -> World:
    """Repositories for `cases` (app, truth-bench case) under `where`, and their scenario;
    `first` gives a repository (by number) replies of its own before its case's (a hostile
    agent's, say)."""
    where.mkdir(parents=True, exist_ok=True)
    conversations, repos, deserves = [], [], {}
    for number, (app, name) in enumerate(cases):
        case = _case(app, name)
        repo = where / f"{app}-{number}"
        shutil.copytree(corpus / app, repo, symlinks=True)
        token = f"fleet-case-{number}-{app}"
        with open(repo / "SOURCE.md", "a", encoding="utf-8") as source:
            source.write(f"\n<!-- {token} -->\n")
        _git("init", "--quiet", "--initial-branch=main", cwd=repo)
        _git("add", "-A", cwd=repo)
        _git("commit", "--quiet", "-m", "the app as its authors wrote it", cwd=repo)
        transcript = [OPENING, *(first or {}).get(number, []), *_transcript(case, corpus)]
        conversations.append({"match": token, "responses": transcript})
        repos.append(repo)
        deserves[repo.name] = ROWS[case.deserves]
    conversations.append({"responses": [OPENING]})  # every run's first request
    repos_file = where / "repos.txt"
    repos_file.write_text("".join(f"{repo}\n" for repo in repos))
    scenario = {"by_history": True, "conversations": conversations}
    return World(repos_file, tuple(repos), scenario, deserves)


def fleet_env(base: dict[str, str], gateway_url: str) -> dict[str, str]:
    """`base` with the scripted gateway, the scripted model and its price."""
    import json

    from wizard.signals import DEFAULT_GATEWAY_MARKER

    return {**base, "WIZARD_GATEWAY_URL": gateway_url, "WIZARD_GATEWAY_KEY": "",
            "WIZARD_GATEWAY_API": "anthropic-messages", "WIZARD_SKILLS_DIR": "",
            "WIZARD_GATEWAY_REFUSAL_MARKER": DEFAULT_GATEWAY_MARKER, "WIZARD_MODEL": MODEL,
            "WIZARD_PRICES": json.dumps(PRICES)}  # fmt: skip
