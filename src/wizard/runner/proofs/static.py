"""Static proofs: queries over the project's syntax trees (tree-sitter, with its Python and
JavaScript/TypeScript grammars) and over the files a skill writes.

Source files are found by a walk that never follows a link and read through the one resolver
(`ProjectRoot`), as the agent's file tools read; dependency, build and `.git` folders and the
installed skill are not the app's code and are not searched.
"""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from wizard.layout import SKILL_FILES
from wizard.listings import HEAVY_FOLDERS
from wizard.names import shown
from wizard.programs.types import CallSiteProof, ConfigProof, InitOptionProof
from wizard.runner.proofs.finding import Finding, failed, proven
from wizard.tools.paths import ProjectRoot, Refusal
from wizard.walk import walk

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

MAX_SOURCE_BYTES = 1_000_000
_NOT_SEARCHED = HEAVY_FOLDERS | {".git"}
_GRAMMARS = {
    ".py": "python",
    **dict.fromkeys((".js", ".mjs", ".cjs", ".jsx"), "javascript"),
    **dict.fromkeys((".ts", ".mts", ".cts"), "typescript"),
    ".tsx": "tsx",
}
_CALLS = {"call", "call_expression"}


@dataclass(frozen=True)
class _Source:
    path: str
    language: str
    root: Node


@cache
def _parser(language: str) -> Parser:
    from tree_sitter import Language, Parser

    if language == "python":
        import tree_sitter_python as grammar

        return Parser(Language(grammar.language()))
    if language == "javascript":
        import tree_sitter_javascript as javascript

        return Parser(Language(javascript.language()))
    import tree_sitter_typescript as typescript

    chosen = typescript.language_tsx() if language == "tsx" else typescript.language_typescript()
    return Parser(Language(chosen))


def _sources(project: Path) -> Iterator[_Source]:
    """Every source file of the app, parsed."""
    root = ProjectRoot(project)
    for path, name, info in sorted(walk(project, lambda name: name not in _NOT_SEARCHED)):
        language = _GRAMMARS.get(Path(name).suffix.lower())
        if language is None or not stat.S_ISREG(info.st_mode) or path.startswith(SKILL_FILES):
            continue
        if any(part in _NOT_SEARCHED for part in path.split("/")[:-1]):
            continue
        data = root.read_bytes(path, max_bytes=MAX_SOURCE_BYTES)
        if isinstance(data, Refusal):
            continue
        yield _Source(path, language, _parser(language).parse(data).root_node)


def _nodes(node: Node) -> Iterator[Node]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def _text(node: Node | None) -> str:
    return "" if node is None or node.text is None else node.text.decode(errors="replace")


def _callee(call: Node) -> str:
    """A call's callee as an attribute chain (`stripe.checkout.Session.create`)."""
    text = _text(call.child_by_field_name("function"))
    return "".join(text.split()).replace("?.", ".")


def _ends_with(callee: str, target: str) -> bool:
    return callee == target or callee.endswith(f".{target}")


def _calls(sources: list[_Source], targets: tuple[str, ...]) -> Iterator[tuple[_Source, Node]]:
    for source in sources:
        for node in _nodes(source.root):
            if node.type in _CALLS and any(_ends_with(_callee(node), t) for t in targets):
                yield source, node


def _key_name(node: Node | None) -> str:
    """A dictionary or object key as written: a string's content or an identifier."""
    if node is not None and node.type in ("string", "template_string"):
        parts = ("string_content", "string_fragment")  # Python's, JavaScript's
        return "".join(_text(child) for child in node.named_children if child.type in parts)
    return _text(node)


def _entries(mapping: Node) -> dict[str, Node | None]:
    """The keys of a Python dictionary or a JavaScript object, with their values."""
    entries: dict[str, Node | None] = {}
    for child in mapping.named_children:
        if child.type == "pair":
            entries[_key_name(child.child_by_field_name("key"))] = child.child_by_field_name(
                "value"
            )
        elif child.type == "shorthand_property_identifier":
            entries[_text(child)] = child
    return entries


def _argument(call: Node, language: str, name: str) -> Node | None:
    """The value a call passes as `name`: a keyword argument in Python, a property of an
    object argument in JavaScript."""
    arguments = call.child_by_field_name("arguments")
    if arguments is None:
        return None
    for child in arguments.named_children:
        if language == "python" and child.type == "keyword_argument":
            if _text(child.child_by_field_name("name")) == name:
                return child.child_by_field_name("value")
        elif language != "python" and child.type == "object":
            found = _entries(child)
            if name in found:
                return found[name]
    return None


def _mapping(value: Node | None, source: _Source) -> Node | None:
    """`value` as a dictionary or object literal, following a plain name to the literal it
    was given in the same file."""
    if value is None:
        return None
    if value.type in ("dictionary", "object"):
        return value
    if value.type not in ("identifier", "shorthand_property_identifier"):
        return None
    name = _text(value)
    for node in _nodes(source.root):
        if node.type == "assignment" and _text(node.child_by_field_name("left")) == name:
            bound = node.child_by_field_name("right")
        elif node.type == "variable_declarator" and _text(node.child_by_field_name("name")) == name:
            bound = node.child_by_field_name("value")
        else:
            continue
        if bound is not None and bound.type in ("dictionary", "object"):
            return bound
    return None


def _where(source: _Source, node: Node) -> str:
    return f"{shown(source.path)}:{node.start_point[0] + 1}"


def call_sites(project: Path, proof: CallSiteProof) -> Finding:
    """Every matching call passes `proof.argument` holding `proof.key`."""
    sources = list(_sources(project))
    passing: list[str] = []
    missing: list[str] = []
    for source, call in _calls(sources, proof.calls):
        mapping = _mapping(_argument(call, source.language, proof.argument), source)
        has_key = mapping is not None and proof.key in _entries(mapping)
        (passing if has_key else missing).append(f"{_where(source, call)} {_callee(call)}")
    wanted = f"{proof.argument}.{proof.key}"
    if missing:
        more = f" (and {len(missing) - 3} more)" if len(missing) > 3 else ""
        return failed(f"no {wanted} at {', '.join(missing[:3])}{more}")
    if not passing:
        return failed(f"no call to {' or '.join(proof.calls)} was found")
    count = f"{len(passing)} call{'s' if len(passing) != 1 else ''}"
    return proven(f"{count} pass {wanted}: {', '.join(passing)}")


def init_option(project: Path, proof: InitOptionProof) -> Finding:
    """The SDK is initialised, and no initialisation turns `proof.option` on."""
    inits = list(_calls(list(_sources(project)), (proof.call,)))
    if not inits:
        return failed(f"no {proof.call}(...) call was found")
    for source, call in inits:
        arguments = call.child_by_field_name("arguments")
        for child in arguments.named_children if arguments is not None else []:
            value = _entries(child).get(proof.option) if child.type == "object" else None
            if value is not None and _text(value) not in ("false", "undefined", "null"):
                return failed(f"{_where(source, call)} sets {proof.option}")
    places = ", ".join(_where(source, call) for source, call in inits)
    return proven(f"{proof.call} at {places} leaves {proof.option} off")


def config_file(project: Path, proof: ConfigProof) -> Finding:
    """The file is JSON that validates against the program's schema."""
    from jsonschema import Draft202012Validator

    data = ProjectRoot(project).read_bytes(proof.path)
    if isinstance(data, Refusal):
        return failed(f"{proof.path} was not written" if data.kind == "missing"
                       else data.reason)  # fmt: skip
    try:
        document = json.loads(data)
    except ValueError as exc:
        return failed(f"{proof.path} is not JSON: {exc}")
    errors = sorted(Draft202012Validator(dict(proof.schema)).iter_errors(document), key=str)
    if errors:
        where = "/".join(str(part) for part in errors[0].absolute_path) or "the top level"
        return failed(f"{proof.path}: at {where}: {errors[0].message}")
    return proven(f"{proof.path} validates against the program's schema")
