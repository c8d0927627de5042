"""What a published branch may carry: reviewed by rule, never by trusting the agent.

A fleet's run is the agent's work on a repository nobody reviewed, and a branch that is
pushed is cloned, built and run by colleagues and CI. So each file the run changed is kept
only if every rule lets it through; what is left out is named in the burndown with why:

- the program's own paths (`ProgramConfig.publishable`): what its integration may change;
- no name that runs code when a colleague works in the repository or CI builds it
  (`code_names`, forges' CI included, and the build and test tools' files);
- nothing in a repository: a `.git`, a submodule's pointer, or a folder that is one by what
  it holds (`HEAD`, `objects/`, `refs/`), whatever its name;
- nothing that looks like a secret, by its name or by what it holds (tokens of the common
  forges and clouds, live payment keys, private keys).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from wizard.code_names import runs_code

# What runs code in a colleague's tools or CI besides `code_names` (which the agent may
# rightly edit in its project, and a program's integration never needs to publish).
TOOL_NAMES = (  # lower case: a path is matched lowered
    "makefile", "*.mk", "justfile", "taskfile.yml", "conftest.py", "pytest.ini", "tox.ini",
    "noxfile.py", "setup.cfg", ".pre-commit-hooks.yaml", "cloudbuild.yaml", "buildspec.yml",
    ".aider*",
)  # fmt: skip
SECRET_NAMES = (
    ".env", ".env.*", "*.env", "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore",
    "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", ".npmrc", ".pypirc", ".netrc",
    ".git-credentials",
    # Names that hold a secret as data, never code (`token_service.py` is the app's).
    "credentials", "credentials.json", "credentials.y*ml", "credentials.toml", "*.credentials",
    "token", "token.txt", "token.json", "*.token", "secret", "secrets", "secret.txt",
    "secrets.json", "secrets.y*ml", "secrets.toml", "*.secret",
    ".aws/*", ".ssh/*", ".docker/*", ".kube/*", "*.tfstate", "*.tfvars",
)  # fmt: skip
# Templates of an environment file, which carry names, not values (their content is read).
TEMPLATES = (".env.example", ".env.sample", ".env.template", ".env.dist")
SECRET_CONTENT = re.compile(
    rb"-----BEGIN [A-Z ]*PRIVATE KEY-----"
    rb"|\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"
    rb"|\bglpat-[A-Za-z0-9_-]{20,}|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"
    rb"|\b[sr]k_live_[A-Za-z0-9]{10,}|\bxox[abposr]-[A-Za-z0-9-]{10,}"
    rb"|\bAIza[0-9A-Za-z_-]{35}|\bnpm_[A-Za-z0-9]{36}|\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}"
)


@dataclass(frozen=True)
class Changed:
    """One file a run changed, as its commit would hold it: its git mode (None if deleted)
    and its new content."""

    path: str
    mode: str | None
    content: bytes = b""


def left_out(changes: Sequence[Changed], publishable: Iterable[str]) -> dict[str, str]:
    """The paths of `changes` a branch may not carry, each with why."""
    allowed = tuple(publishable)
    repositories = _repository_folders(change.path for change in changes)
    out: dict[str, str] = {}
    for change in changes:
        if why := _why_not(change, allowed, repositories):
            out[change.path] = why
    return out


def _why_not(change: Changed, allowed: Sequence[str], repositories: set[str]) -> str | None:
    path = change.path
    parts = PurePosixPath(path).parts
    lowered = path.lower()
    if (
        change.mode == "160000"
        or ".git" in parts
        or any(path.startswith(f"{folder}/") for folder in repositories)
    ):
        return "a repository"
    if runs_code(path) or _matches(lowered, TOOL_NAMES):
        return "runs code in CI or a colleague's tools"
    if _matches(lowered, SECRET_NAMES) and not _matches(lowered, TEMPLATES):
        return "a secret's name"
    if change.content and SECRET_CONTENT.search(change.content):
        return "holds a secret"
    if not _matches(path, allowed):
        return "not a path the program changes"
    return None


def _matches(path: str, patterns: Sequence[str]) -> bool:
    """Whether `path`, or its file name, or a folder it is in, matches one of `patterns`
    (`*` crosses `/`)."""
    name = path.rsplit("/", 1)[-1]
    return any(
        fnmatch.fnmatchcase(path, p) or fnmatch.fnmatchcase(name, p)
        or ("/" in p and fnmatch.fnmatchcase(path, f"*/{p}"))
        for p in patterns
    )  # fmt: skip


def _repository_folders(paths: Iterable[str]) -> set[str]:
    """Folders a run made a repository by what they hold: a `HEAD`, and a `config`, an
    `objects/` or a `refs/` beside it (git takes such a folder for a repository once its
    `objects/` and `refs/` exist, and a fresh one's are empty, so a patch may hold neither)."""
    paths = list(paths)
    heads = {path.rsplit("/", 1)[0] for path in paths if path.endswith("/HEAD")}
    return {
        folder for folder in heads
        if any(p.startswith((f"{folder}/config", f"{folder}/objects/", f"{folder}/refs/"))
               for p in paths)
    }  # fmt: skip
