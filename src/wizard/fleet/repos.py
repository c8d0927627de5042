"""The repositories file: one repository a line, a local path or a git URL, and a branch.

    # comments and blank lines are skipped
    ../services/billing
    https://github.com/acme/web.git  main
    git@github.com:acme/api.git      release

A relative path is the file's folder's. Each repository gets an id from its name, made unique
within the fleet, that names its workspace and its child workflow.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from wizard.errors import UsageError
from wizard.fleet.model import Repo

# The git transports a fleet clones over: URLs of these schemes, and scp-like `user@host:path`.
_URL = re.compile(r"^(?:(?:https?|ssh|git|file)://|[\w.-]+@[\w.-]+:(?!:))", re.IGNORECASE)
# A URL's user and password (`https://user:token@host`), or a lone token as its user: any
# user in an HTTP URL, a password in any. `ssh://git@host` and `git@host:path` name no secret.
_CREDENTIALS = re.compile(r"^(?:https?://[^/@]+@|[a-z]+://[^/@:]+:[^/@]*@)", re.IGNORECASE)
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
_BRANCH = re.compile(r"^(?!-)(?!.*\.\.)[A-Za-z0-9._/-]+$")


def read_repos(path: Path) -> tuple[Repo, ...]:
    """The repositories `path` lists; a bad line or an empty list is a usage error naming
    the line and the fix."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise UsageError(
            f"Cannot read the repositories file {path}: {exc.strerror}.",
            "Give --repos a file with one repository a line (a path or a git URL).",
        ) from exc
    repos: list[Repo] = []
    for number, line in enumerate(lines, 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if len(words) > 2:
            raise _bad(path, number, "has more than a repository and a branch")
        source = _source(words[0], path.parent, path, number)
        branch = words[1] if len(words) == 2 else None
        if branch is not None and not _BRANCH.match(branch):
            raise _bad(path, number, f"names a branch git would not take: {branch!r}")
        taken = {r.id for r in repos}
        repos.append(Repo(id=_unique_id(source, branch, taken), source=source, branch=branch))
    if not repos:
        raise UsageError(f"{path} lists no repository.", "Write one repository a line.")
    if len({(r.source, r.branch) for r in repos}) != len(repos):
        raise UsageError(f"{path} lists a repository twice.", "Keep one line per repository.")
    return tuple(repos)


def _source(word: str, folder: Path, path: Path, number: int) -> str:
    if _URL.match(word):
        if _CREDENTIALS.match(word):
            raise UsageError(
                f"{path}, line {number}, has a URL with credentials in it; a fleet's "
                "repositories are kept in Temporal's history, where they would be too.",
                "Leave the user and token out of the URL: git's credential helper or an SSH "
                "key gives them to the clone.",
            )
        return word
    if "::" in word or re.match(r"^[a-z][a-z0-9+.-]*://", word, re.IGNORECASE):
        raise _bad(path, number, f"uses a git transport wizard does not run: {word!r}")
    local = (folder / word).expanduser().resolve()
    if not local.is_dir():
        raise _bad(path, number, f"names a folder that does not exist: {local}")
    if not (local / ".git").exists():
        raise _bad(path, number, f"names a folder that is not a git repository: {local}")
    return str(local)


def _unique_id(source: str, branch: str | None, taken: set[str]) -> str:
    name = source.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1].removesuffix(".git")
    base = _SAFE.sub("-", name).strip("-.")[:40] or "repo"
    if base not in taken:
        return base
    digest = hashlib.sha256(f"{source} {branch}".encode()).hexdigest()[:6]
    return f"{base}-{digest}"


def _bad(path: Path, number: int, what: str) -> UsageError:
    return UsageError(
        f"{path}, line {number}, {what}.",
        "Each line is a local git repository's path or a git URL, then optionally a branch.",
    )


def fleet_id_for(program: str, repos_file: Path) -> str:
    """The default fleet id: the program and the repositories file's path, so the same
    command names the same fleet (and joins it while it runs)."""
    digest = hashlib.sha256(str(repos_file.resolve()).encode()).hexdigest()[:8]
    return f"{program}-{digest}"
