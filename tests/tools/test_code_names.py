"""`runs_code`: which project paths run code as the user, matched as `PurePath.match` would."""

from __future__ import annotations

from pathlib import PurePosixPath

from hypothesis import given
from hypothesis import strategies as st

from wizard.code_names import CODE_FILES, CODE_FOLDERS, CODE_PATTERNS, runs_code

NAMES = (".claude", "hooks", "settings.json", "settings.local.JSON", "Settings-x.json",
         "site.pth", ".PTH", "pth", "a.pth.txt", "src", "app.py", ".", "..", "", ".Git",
         "node_modules", "x")  # fmt: skip
PARTS = st.sampled_from([*CODE_FOLDERS, *CODE_FILES, *NAMES])


def by_pure_path(relative: str) -> bool:
    """The definition: the path's parts as `PurePosixPath` has them, its patterns matched by
    `PurePath.match`."""
    path = PurePosixPath(relative.lower())
    if any(part in CODE_FOLDERS for part in path.parts) or path.name in CODE_FILES:
        return True
    return any(path.match(pattern) for pattern in CODE_PATTERNS)


@given(st.lists(PARTS, max_size=6), st.booleans())
def test_runs_code_is_what_pure_path_matching_says(parts: list[str], absolute: bool) -> None:
    relative = ("/" if absolute else "") + "/".join(parts)
    assert runs_code(relative) == by_pure_path(relative), relative


def test_the_names_that_run_code() -> None:
    for name in (".claude/hooks/x.sh", "a/.Claude/Settings.local.json", "lib/site.pth",
                 "sub/.git", ".husky/pre-commit", "x/../.npmrc"):  # fmt: skip
        assert runs_code(name), name
    for name in (".claude/hooks", ".claude/commands/x.md", "src/app.py", "claude/settings.json",
                 "a.pth.txt", ""):  # fmt: skip
        assert not runs_code(name), name
