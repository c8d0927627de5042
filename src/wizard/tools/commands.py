"""The fence's policy for shell commands: an allowlist of what a setup needs.

A command is split into simple commands on `&&`, `||` and `|`; each must start with an
allowed program (package managers, build and test runners, `git status`/`git diff`/`git log`,
read-only inspection, and small file chores inside the project). Command substitution,
variable expansion, `;`, background jobs and redirects other than `2>&1` and `>/dev/null`
are refused, so the words the fence checks are the words the shell runs. Every argument that
names a path must stay inside the project and must not be an environment file.

Refusals come in two strengths. Most are plain denials the model can recover from. Clearly
hostile commands (dumping the environment, reading SSH keys or credentials, piping a
download into a shell, sudo, editing shell profiles, deleting outside the project) are
critical: the fence latches and the run ends.
"""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from wizard.tools.base import Decision
from wizard.tools.paths import ENV_TEMPLATES
from wizard.tools.sandbox import SECRET_HOME_PATHS

PACKAGE_MANAGERS = {"npm", "pnpm", "yarn", "bun", "pip", "pip3", "uv", "poetry", "pipenv"}
PM_SUBCOMMANDS = {
    "install", "i", "ci", "add", "remove", "uninstall", "update", "upgrade", "view", "list",
    "ls", "show", "sync", "lock", "run", "test", "build", "freeze", "outdated", "why", "info",
}  # fmt: skip
RUNNERS = {
    "pytest", "tsc", "eslint", "prettier", "ruff", "mypy", "jest", "vitest", "make", "go",
    "cargo", "node", "python", "python3", "npx", "tox", "nox", "gradle", "mvn", "bundle",
}  # fmt: skip
INSPECTION = {
    "ls", "cat", "head", "tail", "wc", "grep", "rg", "find", "pwd", "echo", "which", "file",
    "stat", "tree", "sort", "uniq", "diff", "true", "test", "basename", "dirname", "cut",
}  # fmt: skip
FILE_CHORES = {"mkdir", "touch", "rm", "cp", "mv"}
GIT_READ = {"status", "diff", "log", "show", "branch", "rev-parse", "remote", "ls-files"}

# The start of a simple command: where a program name stands.
_COMMAND_START = r"(?:^|[;&|(]\s*|\b(?:exec|nohup|xargs|time|command)\s+)"
# A name in the user's home folder: `~/x`, or the home folder's absolute path (`{home}`).
_IN_HOME = r"(?:~|{home})/"
_NAME_END = r"(?=$|[\s/'\"])"
SHELL_PROFILES = (".bashrc", ".bash_profile", ".zshrc", ".zprofile", ".profile", ".bash_login")
HOSTILE_RULES: list[tuple[str, str]] = [
    (_COMMAND_START + r"(env|printenv|export\s+-p|declare\s+-x|compgen\s+-v)(\s|$)",
     "dumping the environment"),
    (r"/proc/[^\s/]+/environ", "reading a process environment"),
    (_COMMAND_START + r"(sudo|su|doas)(\s|$)", "running as another user"),
    (r"(curl|wget)\b[^|]*\|\s*(ba|z|da|k)?sh\b", "piping a download into a shell"),
    (r"(ba|z|da|k)?sh\s+<\(\s*(curl|wget)", "running a downloaded script"),
    (r"(^|[\s/'\"=])id_(rsa|ed25519|ecdsa)" + _NAME_END, "reading SSH keys"),
    # The same credentials the OS sandbox closes to every command (one list, in sandbox.py),
    # where they are: in the home folder.
    (_IN_HOME + "(" + "|".join(re.escape(p) for p in SECRET_HOME_PATHS) + ")" + _NAME_END,
     "reading credentials"),
    (_IN_HOME + "(" + "|".join(re.escape(p) for p in SHELL_PROFILES) + ")" + _NAME_END,
     "touching a shell profile"),
]  # fmt: skip


@functools.cache
def _hostile_patterns(home: str) -> list[tuple[re.Pattern[str], str]]:
    return [
        (re.compile(rule.replace("{home}", re.escape(home.rstrip("/")))), what)
        for rule, what in HOSTILE_RULES
    ]


_FORBIDDEN_SYNTAX = [
    ("$", "variable or command expansion"),
    ("`", "command substitution"),
    (";", "';' (use && between commands)"),
    ("<(", "process substitution"),
    (">(", "process substitution"),
    ("\n", "multi-line commands"),
]
_ENV_MENTION = re.compile(r"\.env(?:\.[\w-]+)?")
_SPLIT = re.compile(r"\s*(?:&&|\|\||\|)\s*")
_ALLOWED_REDIRECTS = re.compile(r"\s(2>&1|>\s*/dev/null|2>\s*/dev/null)(?=\s|$)")


@dataclass(frozen=True)
class CommandContext:
    """What the policy needs from the fence: how to vet a path argument."""

    check_path: Callable[[str], str | None]  # an error for a forbidden path, else None
    project_dir: Path
    # The OS sandbox closes `.env*` files to every command: the fence's special cases that
    # only guard them (recursive grep, rg over hidden files) are not needed then.
    sandboxed: bool = False


def hostile_reason(text: str, home: Path | None = None) -> str | None:
    """Why `text` (a command or a path) is plainly hostile, or None."""
    for pattern, what in _hostile_patterns(str(home or Path.home())):
        if pattern.search(text):
            return f"Blocked: {what} is never allowed."
    return None


def check_command(command: str, ctx: CommandContext) -> Decision:
    """Whether `command` may run in the project."""
    if (hostile := hostile_reason(command)) is not None:
        return Decision(False, hostile, critical=True)
    if any(m.group(0) not in ENV_TEMPLATES for m in _ENV_MENTION.finditer(command)):
        return Decision(
            False,
            "Blocked: environment files are closed to bash. Use check_env_keys and "
            "set_env_values; values are never shown.",
        )
    stripped = _ALLOWED_REDIRECTS.sub(" ", f" {command} ").strip()
    for token, what in _FORBIDDEN_SYNTAX:
        if token in stripped:
            return Decision(False, f"Blocked: {what} is not allowed in bash here.")
    if re.search(r"(^|[^&|])&($|[^&])", stripped) or re.search(r"[<>]", stripped):
        return Decision(False, "Blocked: redirects and background jobs are not allowed in bash.")
    for part in _SPLIT.split(stripped):
        decision = _check_simple(part, ctx)
        if not decision.allow:
            return decision
    return Decision(True)


def _check_simple(part: str, ctx: CommandContext) -> Decision:
    try:
        words = shlex.split(part)
    except ValueError as exc:
        return Decision(False, f"Blocked: cannot parse the command ({exc}).")
    if not words:
        return Decision(False, "Blocked: empty command.")
    program, args = Path(words[0]).name, words[1:]
    if program not in PACKAGE_MANAGERS | RUNNERS | INSPECTION | FILE_CHORES | {"git"}:
        return Decision(
            False,
            f"Blocked: '{program}' is not on the wizard's list of setup commands. Use the "
            "read, write and edit tools for files; bash runs package managers, builds, tests, "
            "git status/diff and read-only inspection.",
        )
    rule = _RULES.get(program)
    if ctx.sandboxed and program in _ENV_ONLY_RULES:
        rule = None
    if rule is not None and (reason := rule(args)):
        return Decision(False, f"Blocked: {reason}")
    if program == "rm" and any(_outside(arg, ctx) for arg in args if not arg.startswith("-")):
        return Decision(False, "Blocked: deleting outside the project.", critical=True)
    for arg in args:
        if reason := _path_problem(arg, ctx):
            return Decision(False, f"Blocked: {reason}")
    return Decision(True)


def _outside(arg: str, ctx: CommandContext) -> bool:
    error = ctx.check_path(arg)
    return error is not None and "outside" in error


def _path_problem(arg: str, ctx: CommandContext) -> str | None:
    if arg.startswith("-") and "=" not in arg:
        return None
    value = arg.split("=", 1)[1] if arg.startswith("-") else arg
    if "{" in value or re.search(r"(^|/)\.[^/]*[*?\[]", value):
        return f"'{arg}': brace expansion and globs over hidden files are not allowed."
    looks_like_path = (
        "/" in value or value.startswith((".", "~")) or (ctx.project_dir / value).exists()
    )
    if not looks_like_path:
        return None
    return ctx.check_path(value)


def _git(args: list[str]) -> str | None:
    sub = next((a for a in args if not a.startswith("-")), None)
    if sub not in GIT_READ:
        return f"git {sub or ''} is not allowed; only git {', '.join(sorted(GIT_READ))}.".strip()
    return None


def _grep(args: list[str]) -> str | None:
    if any(
        a in ("-r", "-R", "--recursive", "-d", "--directories")
        or (a.startswith("-") and not a.startswith("--") and set("rR") & set(a))
        for a in args
    ):
        return "recursive grep would read .env files; use rg (it skips hidden files) or name files."
    return None


def _rg(args: list[str]) -> str | None:
    if any(a in ("--hidden", "-.", "--no-ignore", "-u", "-uu", "-uuu") for a in args):
        return "rg may not search hidden or ignored files."
    return None


def _find(args: list[str]) -> str | None:
    if any(
        a in ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprintf") for a in args
    ):
        return "find may only list files."
    return None


def _package_manager(args: list[str]) -> str | None:
    sub = next((a for a in args if not a.startswith("-")), None)
    if sub is not None and sub not in PM_SUBCOMMANDS:
        return f"this package-manager command ('{sub}') is not a setup step."
    return None


# What an interpreter is asked for its version or its usage: nothing runs.
_ASKING = frozenset({"--version", "-v", "-V", "-VV", "--help", "-h"})


def _interpreter(args: list[str]) -> str | None:
    if args and all(a in _ASKING for a in args):
        return None
    if any(a in ("-c", "-e", "--eval", "-p", "--print", "-") for a in args):
        return "inline code is not allowed; write a file and run it, or use the tools."
    if not any(not a.startswith("-") or a == "-m" for a in args):
        return "an interpreter needs a script file or -m module (code from stdin is not allowed)."
    return None


def _cp_mv(args: list[str]) -> str | None:
    return (
        None
        if len([a for a in args if not a.startswith("-")]) >= 2
        else "cp/mv need a source and a target."
    )


# Rules whose only purpose is to keep `.env*` contents out of a command's output.
_ENV_ONLY_RULES = frozenset({"grep", "rg"})
_RULES: dict[str, Callable[[list[str]], str | None]] = {
    "git": _git,
    "grep": _grep,
    "rg": _rg,
    "find": _find,
    "node": _interpreter,
    "python": _interpreter,
    "python3": _interpreter,
    "cp": _cp_mv,
    "mv": _cp_mv,
    **{pm: _package_manager for pm in PACKAGE_MANAGERS},
}
