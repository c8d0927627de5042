"""Whether a program fits a project: checked before the agent starts (a program that does not
fit ends `not_applicable`, with nothing changed), and again by the proofs on the project as
it was before the run (an app that never sent email has no send path for a probe to prove,
whatever the agent wrote).

The check is deliberately generous: a program fits unless the project has no code in the
program's languages, or none of its code and manifests mentions any of the program's words
(`smtp`, `nodemailer`, `stripe`). Deciding that a program does not fit means the agent never
looks, so only a project that plainly lacks what the program needs is turned away; anything
finer is left to the skill's own stop conditions.
"""

from __future__ import annotations

import os
import posixpath
import stat
from collections.abc import Iterable
from pathlib import Path

from wizard.programs.types import Fit, ProgramConfig
from wizard.runner.proofs.codebase import GRAMMARS, MAX_SOURCE_BYTES, NOT_SEARCHED, Codebase
from wizard.tools.paths import ProjectRoot, Refusal
from wizard.walk import walk

_LANGUAGES = {"python": "Python", "javascript": "JavaScript/TypeScript"}
_MANIFESTS = frozenset({
    "package.json", "requirements.txt", "pyproject.toml", "Pipfile", "setup.py", "setup.cfg",
    "poetry.lock", "uv.lock", "Pipfile.lock",
})  # fmt: skip


def lacks(code: Codebase, fit: Fit) -> str | None:
    """Why the project does not fit (None when it does)."""
    languages = {
        _family(GRAMMARS[suffix]) for suffix in _suffixes(code.files) if suffix in GRAMMARS
    }
    if not languages & set(fit.languages):
        named = " or ".join(_LANGUAGES.get(language, language) for language in fit.languages)
        return f"the project has no {named} code"
    signals = tuple(signal.encode() for signal in fit.signals)
    for path in _ordered(code.files, fit):
        data = code.read(path)
        if data is not None and any(signal in data.lower() for signal in signals):
            return None
    return fit.lacking


def fits_at_root(project: Path, fit: Fit) -> bool:
    """Whether the project's own top folder already shows it fits: a manifest or a code file
    there names a word of the program's, and the project has code in its languages (found by
    a walk that stops at the first). Most projects that fit say so there, and this reads a
    few files where `lacks` walks them all; False says nothing, `lacks` decides."""
    signals = tuple(signal.encode() for signal in fit.signals)
    resolver = ProjectRoot(project)
    try:
        names = sorted(entry.name for entry in os.scandir(project) if entry.is_file(
            follow_symlinks=False))  # fmt: skip
    except OSError:
        return False
    said = False
    for name in _ordered(names, fit):
        data = resolver.read_bytes(name, max_bytes=MAX_SOURCE_BYTES)
        if not isinstance(data, Refusal) and any(signal in data.lower() for signal in signals):
            said = True
            break
    if not said:
        return False
    for _, name, info in walk(project, lambda folder: folder not in NOT_SEARCHED):
        language = GRAMMARS.get(_suffix(name))
        if stat.S_ISREG(info.st_mode) and language and _family(language) in fit.languages:
            return True
    return False


def would_fit(code: Codebase, programs: Iterable[ProgramConfig]) -> list[ProgramConfig]:
    """The programs among `programs` that fit the project."""
    return [p for p in programs if p.fits is not None and lacks(code, p.fits) is None]


def _family(language: str) -> str:
    return "python" if language == "python" else "javascript"


def _suffixes(paths: Iterable[str]) -> set[str]:
    return {_suffix(path) for path in paths}


def _suffix(path: str) -> str:
    return posixpath.splitext(path)[1].lower()


def _ordered(paths: Iterable[str], fit: Fit) -> list[str]:
    """The files the words are looked for in: manifests first (a dependency says most),
    then the code in the program's languages, those whose path hints at the domain first
    (a project that fits is usually told in a few files)."""
    manifests: list[str] = []
    hinted: list[str] = []
    code: list[str] = []
    for path in paths:
        name = posixpath.basename(path)
        language = GRAMMARS.get(_suffix(name))
        if name in _MANIFESTS or name.startswith("requirements"):
            manifests.append(path)
        elif language is not None and _family(language) in fit.languages:
            (hinted if any(h in path.lower() for h in fit.hints) else code).append(path)
    return manifests + hinted + code
