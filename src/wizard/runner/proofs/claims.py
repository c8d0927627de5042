"""What the agent records for a probe is a claim: these tie it to the app, or say why not.

A runtime probe runs what the skill recorded (a send function, an MCP server's command).
That proves the app works only if what it runs is the app's: a function the app had before
the run, or one that code it had calls; a server file the app had, one its own manifests or
MCP configs start, or what its build makes of one. And a program that moves the app off an
old path (email over SMTP) is not done while the old calls are still there.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
import tomllib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wizard.names import shown
from wizard.programs.types import CallPattern
from wizard.runner.proofs.codebase import CALLS, Codebase, Source, callee, is_test, nodes, text
from wizard.runner.proofs.finding import Finding, failed, not_run
from wizard.runner.proofs.reach import (
    Imported,
    calls,
    compiled_from,
    declared_entries,
    defines,
    import_bindings,
    import_files,
    import_names,
    imported,
    js_file,
)
from wizard.runner.proofs.scopes import enclosing_function

if TYPE_CHECKING:
    from tree_sitter import Node

NOT_JOURNALED = (
    "wizard cannot tell whether what the skill recorded is the app's: the run was not "
    "journaled, so nothing says what the project held before it"
)
# Words that start a command rather than name the file it runs.
_LAUNCHERS = frozenset({
    "python", "python3", "node", "uv", "run", "npx", "bunx", "deno", "tsx", "ts-node",
    "poetry", "pipenv", "exec", "--", "uvx",
})  # fmt: skip
# Package managers whose `run NAME` (or `start`) runs a script of the project's manifest.
_RUNNERS = frozenset({"npm", "yarn", "pnpm", "bun"})


def module_file(module: str, folder: str, code: Codebase) -> str | None:
    """The app file of a recorded entry's module: a Python module name or a script path,
    from `folder` of the project."""
    if "/" in module or module.endswith((".js", ".mjs", ".cjs", ".ts", ".py")):
        return js_file(posixpath.join(folder, module), code)
    stem = posixpath.normpath(posixpath.join(folder, *module.split(".")))
    return next((c for c in (f"{stem}.py", f"{stem}/__init__.py") if code.has(c)), None)


def entry_is_apps(
    code: Codebase,
    module: str,
    function: str,
    folder: str,
    replaced: Sequence[CallPattern] = (),
) -> Finding | str:
    """Why the recorded `module:function` is the app's; else a finding that says why it
    proves nothing. A function the run added must be called where the app sent before the
    run (a function that made one of the `replaced` calls), or, where nothing says how it
    sent, by code the app had."""
    prior = code.before()
    if prior is None:
        return not_run(NOT_JOURNALED)
    file = module_file(module, folder, code)
    if file is None:
        return failed(f"the recorded entry {module} is not a file of the app")
    had = prior.source(file)
    if had is not None and defines(had, function):
        return f"{module}:{function} is a function the app had before the run"
    senders = _senders(prior, replaced)
    for source in code.sources:
        if source.line or is_test(source.path) or not prior.has(source.path):
            continue
        if source.path != file and file not in imported(source, code):
            continue
        for call in calls(source, function):
            caller = _function_name(call)
            if not senders:
                return f"{module}:{function} is called by {shown(source.path)}, which the app had"
            if (source.path, caller) in senders:
                return (f"{module}:{function} is called by {shown(source.path)}'s {caller}, "
                        "which sent the app's email before the run")  # fmt: skip
    where = "where the app sent before the run" if senders else "by any code the app had"
    return failed(f"the recorded entry {module}:{function} is not the app's: the app did not "
                  f"have it before the run, and it is not called {where}")  # fmt: skip


def _senders(prior: Codebase, replaced: Sequence[CallPattern]) -> set[tuple[str, str]]:
    """The functions (file, name) that made one of the `replaced` calls before the run."""
    return {(source.path, _function_name(call)) for source, call in _calls_of(prior, replaced)}


def _function_name(node: Node) -> str:
    """The name of the function `node` is in ("" at a module's top)."""
    scope = enclosing_function(node)
    while scope is not None and scope.child_by_field_name("name") is None:
        holder = scope.parent  # `const send = () => ...`: the name is its declarator's
        if holder is not None and holder.type == "variable_declarator":
            return text(holder.child_by_field_name("name"))
        scope = enclosing_function(scope)
    return text(scope.child_by_field_name("name")) if scope is not None else ""


def calls_left(code: Codebase, patterns: Sequence[CallPattern]) -> list[str]:
    """Where the app still makes one of the calls `patterns` name (`path:line callee`)."""
    return sorted({f"{source.where(call)} {callee(call)}" for source, call in
                   _calls_of(code, patterns)})  # fmt: skip


def _calls_of(code: Codebase, patterns: Sequence[CallPattern]) -> Iterator[tuple[Source, Node]]:
    for source in code.sources:
        if is_test(source.path):
            continue
        names = set(import_names(source))
        bound = import_bindings(source)
        for pattern in patterns:
            if pattern.modules and not any(_imports(names, module) for module in pattern.modules):
                continue
            for node in nodes(source.root):
                if node.type not in CALLS:
                    continue
                name = callee(node)
                if name.rsplit(".", 1)[-1] in pattern.names and _may_be(
                    pattern, bound.get(_root(name)), source, code
                ):
                    yield source, node


def _root(chain: str) -> str:
    """The name an attribute chain starts from (`EmailClient().send` → `EmailClient`)."""
    found = re.match(r"[\w$]+", chain)
    return found.group() if found else ""


# How many re-exports through the app's files a name is followed; one passed on further
# may be anything, and counts.
_REEXPORTS = 4


def _may_be(
    pattern: CallPattern, bound: Imported | None, source: Source, code: Codebase, depth: int = 0
) -> bool:
    """Whether a call whose chain starts from a name `source` imports (`bound`; None: a name
    it does not import, such as `mail = Mail(app)`) may be one `pattern` names. It may not
    only when the name comes from the app's own code and that code does not use the
    pattern's modules: an app file that defines it, or imports it from such a file, without
    importing them. Another package's name may be anything (`current_app.extensions["mail"]`
    is Flask-Mail's): it counts."""
    if bound is None or not pattern.modules:
        return True
    if any(_imports(set(bound.modules), module) for module in pattern.modules):
        return True
    files = {found for module in bound.modules for found in import_files(module, source, code)}
    if not files:  # another package's: what it is, is not seen here
        return True
    for path in files:
        if (held := code.source(path)) is None:
            continue
        again = import_bindings(held).get(bound.name)
        if again is not None:  # re-exported: followed so far, and past that it counts
            if depth >= _REEXPORTS or _may_be(pattern, again, held, code, depth + 1):
                return True
        elif any(_imports(set(import_names(held)), module) for module in pattern.modules):
            return True
    return False


def _imports(names: set[str], module: str) -> bool:
    return any(name == module or name.startswith(f"{module}.") or name.startswith(f"{module}/")
               for name in names)  # fmt: skip


def server_is_apps(
    code: Codebase, project: Path, command: Sequence[str], folder: str, tool: str
) -> Finding | str:
    """Why the recorded server command starts the app's own server and `tool` is one the app
    had; else a finding that says why it proves nothing."""
    prior = code.before()
    if prior is None:
        return not_run(NOT_JOURNALED)
    started = _started(command, folder, project, code)
    if started is None:
        return failed(f"the recorded command ({' '.join(command)}) names no file of the app")
    if (why := _apps_server(started, prior)) is None:
        return failed(f"the recorded server {shown(started)} is not the app's: it was not "
                      "in the project before the run, and nothing the project had starts "
                      "it")  # fmt: skip
    if not _named_in(prior, tool):
        return failed(f"the recorded tool {tool!r} is not one the app had before the run")
    return f"{why}, and its tool {tool} was in the app's code"


def _apps_server(started: str, prior: Codebase) -> str | None:
    """Why the file a server command runs is the app's (None: it is not)."""
    if prior.has(started):
        return f"the server {shown(started)} was in the project before the run"
    if (manifest := declared_entries(prior).get(started)) is not None:
        return f"the project's {shown(manifest)} starts {shown(started)}"
    made_from = compiled_from(started, prior)
    if made_from is not None and prior.has(made_from):
        return f"{shown(started)} is the build of {shown(made_from)}, which the app had"
    return None


def _started(
    command: Sequence[str], folder: str, project: Path, code: Codebase, depth: int = 0
) -> str | None:
    """The file a server command runs (`python server.py`, `node build/index.js`,
    `python -m pkg.server`, `uv run server.py`, `npm start`, a console script's name)."""
    words = list(command)
    if depth > 3 or not words:
        return None
    if posixpath.basename(words[0]) in _RUNNERS and len(words) > 1:
        name = words[2] if words[1] == "run" and len(words) > 2 else words[1]
        script = _project_script(name, folder, code)
        return None if script is None else _started(shlex.split(script), folder, project,
                                                    code, depth + 1)  # fmt: skip
    for index, word in enumerate(words):
        if word == "-m" and index + 1 < len(words):
            return module_file(words[index + 1], folder, code)
        if word.startswith("-") or posixpath.basename(word) in _LAUNCHERS:
            continue
        path = posixpath.normpath(posixpath.join(folder, word))
        if path.startswith("../") or path == "..":
            return None
        if (script := js_file(path, code)) is not None:
            return script
        if (project / path).is_file():  # a build's output: not among the app's own files
            return path
        if (named := _console_script(word, folder, code)) is not None:
            return named
    return None


def _project_script(name: str, folder: str, code: Codebase) -> str | None:
    """The command of the npm script `name`, as the project had it before the run (one the
    run added or changed is not the app's)."""
    prior = code.before()
    manifest = posixpath.normpath(posixpath.join(folder, "package.json"))
    scripts = [_json_field(c.read(manifest), "scripts") for c in (prior, code) if c is not None]
    found = [s.get(name) if isinstance(s, dict) else None for s in scripts]
    return found[0] if found and isinstance(found[0], str) and len(set(found)) == 1 else None


def _console_script(word: str, folder: str, code: Codebase) -> str | None:
    """The file a command name of the project's runs: a console script of its
    `pyproject.toml` (`weather = "weather:main"`), or a `bin` of its `package.json`."""
    manifest = code.read(posixpath.normpath(posixpath.join(folder, "pyproject.toml")))
    try:
        scripts = tomllib.loads((manifest or b"").decode(errors="replace"))
    except tomllib.TOMLDecodeError:
        scripts = {}
    target = scripts.get("project", {}).get("scripts", {}).get(word)
    if isinstance(target, str):
        return module_file(target.split(":")[0], folder, code)
    bins = _json_field(code.read(posixpath.normpath(posixpath.join(folder, "package.json"))),
                       "bin")  # fmt: skip
    if isinstance(bins, dict) and isinstance(bins.get(word), str):
        return js_file(posixpath.join(folder, bins[word]), code) or posixpath.normpath(
            posixpath.join(folder, bins[word])
        )
    return None


def _json_field(data: bytes | None, field: str) -> Any:
    try:
        document = json.loads(data or b"")
    except ValueError:
        return None
    return document.get(field) if isinstance(document, dict) else None


def _named_in(code: Codebase, tool: str) -> bool:
    """Whether the app's code names `tool` (a function, or a string: a tool's name)."""
    pattern = re.compile(rb"(?<![\w-])" + re.escape(tool.encode()) + rb"(?![\w-])")
    return any(pattern.search(text(source.root).encode()) for source in code.sources)
