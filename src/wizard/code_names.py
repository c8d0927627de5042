"""The names in a project whose content runs as the user, outside any sandbox, when the user
does something ordinary there: commits (git hooks, husky, pre-commit, lefthook), pushes (a
forge's CI: `.github`, `.gitlab-ci.yml`, …), opens an editor or an agent (`.vscode` tasks
that run on folder open, `.claude`, `.cursor` and `.gemini` settings, `.mcp.json`, vim's
rc files), enters the folder (`.envrc`, `.rvmrc`, `mise` and asdf's tool files), installs
(`.npmrc`, `.yarnrc.yml` with its `yarnPath`, `.pnpmfile.cjs`, `bunfig.toml`), lints
(`.pylintrc` loads plugins), starts Python (a `.pth` file, `sitecustomize.py`) or a shell
(rc files).

One list, used by both doors: the OS sandbox closes them to commands, wizard's `write` and
`edit` refuse them (unless the program declares the path as one its skill must write), and a
run that changed one anyway is warned of. `.gitignore` is not here: it runs nothing, and a
setup rightly adds `.env` to it; nor is `.gitattributes`, whose filters run only what the
repository's config (closed to commands) defines.
"""

from __future__ import annotations

import fnmatch
import re
from pathlib import PurePath

# Everything beneath these folders.
CODE_FOLDERS = (
    ".git", ".husky", ".githooks", ".vscode", ".idea", ".devcontainer", ".cursor", ".gemini",
    ".windsurf", ".continue",
    # Forges' CI, run with the repository's secrets on the next push.
    ".github", ".gitlab", ".circleci", ".buildkite", ".azure-pipelines", ".woodpecker", ".gitea",
    ".forgejo", ".tekton",
)  # fmt: skip
# These names, at any depth.
CODE_FILES = (
    ".gitmodules", ".gitconfig", ".mcp.json", ".envrc", ".npmrc",
    ".yarnrc", ".yarnrc.yml", ".pnpmfile.cjs", ".pre-commit-config.yaml", "lefthook.yml",
    ".lefthook.yml", "sitecustomize.py", "usercustomize.py", ".bashrc", ".bash_profile",
    ".zshrc", ".zprofile", ".profile", ".ripgreprc", ".gitlab-ci.yml", ".travis.yml",
    "azure-pipelines.yml", "bitbucket-pipelines.yml", ".drone.yml", "Jenkinsfile",
    ".woodpecker.yml", "appveyor.yml", ".appveyor.yml", ".pylintrc", "pylintrc", "bunfig.toml",
    ".mise.toml", "mise.toml", ".tool-versions", ".rvmrc", ".exrc", ".nvimrc", ".nvim.lua",
    ".vimrc", ".gvimrc",
)  # fmt: skip
# Paths ending in these patterns, at any depth.
CODE_PATTERNS = ("*.pth", ".claude/settings*.json", ".claude/hooks/*")
# Closed to commands at the project's root even where nothing is there yet (the sandbox
# stands an empty placeholder in while a command runs, which a command's `ls` and `git
# status` show), so a command cannot make them: those that run on the user's next ordinary
# step with nothing to review first (a repository on `cd`, `npm`, `yarn` and `pnpm`
# settings on the next install, Claude Code's hooks). The sandbox runtime adds its own
# (`.vscode`, `.idea`, `.mcp.json`, `.gitmodules`, rc files). The rest of the list, if made
# anyway, is named in the outcome.
ROOT_NAMES = (
    ".git", ".husky", ".githooks", ".npmrc", ".yarnrc", ".yarnrc.yml", ".pnpmfile.cjs", ".envrc",
    ".claude/settings.json", ".claude/settings.local.json",
)  # fmt: skip


_FOLDERS, _FILES = frozenset(CODE_FOLDERS), frozenset(CODE_FILES)
# Each pattern's parts, the last first, as matchers: a path is matched from the right, part by
# part, as `PurePath.match` matches it.
_PATTERNS = tuple(
    tuple(re.compile(fnmatch.translate(piece)).match for piece in reversed(pattern.split("/")))
    for pattern in CODE_PATTERNS
)


def runs_code(relative: str | PurePath) -> bool:
    """Whether the project path `relative` is one whose content runs as the user (its case
    ignored, as a case-insensitive file system would). Its parts are `PurePosixPath`'s (no
    empty or `.` part; a `..` stays one), found without it: this is asked of every file of a
    project when a run's sandbox policy is made."""
    parts = [part for part in str(relative).lower().split("/") if part and part != "."]
    if not parts:
        return False
    if parts[-1] in _FILES or not _FOLDERS.isdisjoint(parts):
        return True
    parts.reverse()
    return any(
        len(parts) >= len(pattern)
        and all(match(part) for match, part in zip(pattern, parts[: len(pattern)], strict=True))
        for pattern in _PATTERNS
    )


def refusal_text(relative: str) -> str:
    """Why wizard's file tools will not write `relative`."""
    return (
        f"{relative} runs code as the user when they commit, open the project in an editor "
        "or agent, enter its folder, install, or start Python, outside any sandbox; wizard's "
        "file tools never write it unless the program declares it. Tell the user what to add "
        "there in your final message instead."
    )
