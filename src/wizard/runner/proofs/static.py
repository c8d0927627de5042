"""Static proofs: queries over the app's syntax trees (`codebase`) and the files a skill
writes, each following what reaches the vendor rather than checking that a name is there.

A call site proof follows the value it looks for to where it comes from (`values`); an
initialisation proof asks whether a page of the app loads it (`reach`); a config proof
checks what the skill wrote against what the user answered in this run and against the
project. Where the query cannot follow the code, the proof says "cannot tell" (`not_run`),
never "failed".
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from wizard.names import shown
from wizard.programs.types import CallSiteProof, ConfigProof, InitOptionProof
from wizard.runner.proofs.codebase import (
    CALLS,
    Codebase,
    Source,
    callee,
    ends_with,
    is_test,
    nodes,
    text,
)
from wizard.runner.proofs.finding import Finding, failed, not_run, proven
from wizard.runner.proofs.mappings import Keys, mapping
from wizard.runner.proofs.reach import browser_roots, reachable
from wizard.runner.proofs.repository import remotes, same_repository, shown_remote
from wizard.runner.proofs.values import origin
from wizard.tools.paths import ProjectRoot, Refusal

if TYPE_CHECKING:
    from tree_sitter import Node

Verdict = Literal["passes", "missing", "wrong", "unknown"]


@dataclass(frozen=True)
class _Judged:
    verdict: Verdict
    said: str


def app_calls(code: Codebase, targets: Sequence[str]) -> Iterator[tuple[Source, Node]]:
    """The app's calls (its tests left out) whose callee ends with one of `targets`."""
    for source in code.sources:
        if is_test(source.path):
            continue
        for node in nodes(source.root):
            if node.type in CALLS and any(ends_with(callee(node), t) for t in targets):
                yield source, node


def call_sites(code: Codebase, proof: CallSiteProof) -> Finding:
    """Every matching call passes `proof.argument` holding `proof.key`, from the app."""
    judged = [(source, call, _judge(code, source, call, proof))
              for source, call in app_calls(code, proof.calls)]  # fmt: skip
    wanted = f"{proof.argument}.{proof.key}"
    if not judged:
        return failed(f"no call to {' or '.join(proof.calls)} was found in the app's code")

    def listed(verdicts: tuple[Verdict, ...]) -> list[str]:
        return [f"{source.where(call)} {callee(call)}: {judged.said}"
                for source, call, judged in judged if judged.verdict in verdicts]  # fmt: skip

    if wrong := listed(("missing", "wrong")):
        return failed(f"checked {len(judged)} call(s) for {wanted}: {_some(wrong)}")
    if unknown := listed(("unknown",)):
        return not_run(f"cannot tell what {wanted} holds: {_some(unknown)}")
    return proven(f"checked {len(judged)} call(s), each passes {wanted} from the app: "
                  f"{_some(listed(('passes',)), 5)}")  # fmt: skip


def _some(lines: list[str], shown_at_most: int = 3) -> str:
    more = len(lines) - shown_at_most
    return "; ".join(lines[:shown_at_most]) + (f" (and {more} more)" if more > 0 else "")


def _judge(code: Codebase, source: Source, call: Node, proof: CallSiteProof) -> _Judged:
    value, readable = _argument(call, source, proof.argument)
    if value is None:
        if not readable:
            return _Judged("unknown", "its arguments are built where the query cannot follow")
        if (later := _tagged_later(code, source, call, proof)) is not None:
            return _Judged("passes", f"tagged by {later}")
        return _Judged("missing", f"no {proof.argument}")
    keys = mapping(value, source)
    if keys is None:
        written = " ".join(text(value).split())[:60]
        return _Judged("unknown", f"{proof.argument} is {written}, which the query cannot follow")
    if proof.key not in keys.entries:
        if not keys.complete:
            return _Judged("unknown", f"{proof.argument} is built from parts the query cannot "
                           "follow")  # fmt: skip
        return _Judged("missing", f"{proof.argument} has no {proof.key}")
    found = origin(keys.entries[proof.key], source, code)
    if found.kind == "app":
        return _Judged("passes", f"{proof.key} from {found.said}")
    return _Judged("unknown" if found.kind == "unknown" else "wrong",
                   f"{proof.key} is {found.said}")  # fmt: skip


def _argument(call: Node, source: Source, name: str) -> tuple[Node | None, bool]:
    """The value a call passes as `name` (a keyword, or a key of a mapping argument such as
    Python's `params={...}` or JavaScript's object), and whether every argument could be
    read (a `**kwargs` or a mapping built elsewhere could hold it)."""
    arguments = call.child_by_field_name("arguments")
    readable = True
    for child in arguments.named_children if arguments is not None else []:
        if child.type == "keyword_argument":
            if text(child.child_by_field_name("name")) == name:
                return child.child_by_field_name("value"), True
            if text(child.child_by_field_name("name")) != "params":  # a StripeClient's
                continue
            child = child.child_by_field_name("value") or child
        if child.type in ("dictionary_splat", "list_splat", "spread_element"):
            readable = False
            continue
        if child.type not in ("dictionary", "object", "identifier", *CALLS) or _an_id(child):
            continue
        keys: Keys | None = mapping(child, source)
        if keys is None:
            readable = False
        elif name in keys.entries:
            return keys.entries[name], True
        elif not keys.complete:
            readable = False
    return None, readable


def _an_id(node: Node) -> bool:
    """Whether a name holds an object's id (`customer_id`, `cid`), not a mapping."""
    return node.type == "identifier" and re.search(r"(^|_)ids?$|[a-z]Ids?$", text(node)) is not None


def _tagged_later(code: Codebase, source: Source, call: Node, proof: CallSiteProof) -> str | None:
    """Where a later call tags what `call` created (`c = create(...)`, then
    `update(c.id, metadata=...)` in the same file), if one does."""
    if not proof.followed_by:
        return None
    holder = call.parent
    while holder is not None and holder.type in ("await_expression", "parenthesized_expression"):
        holder = holder.parent
    if holder is None or holder.type not in ("assignment", "variable_declarator"):
        return None
    name = text(holder.child_by_field_name("left") or holder.child_by_field_name("name"))
    if not name:
        return None
    for later in (n for n in nodes(source.root) if n.type in CALLS):
        if not any(ends_with(callee(later), target) for target in proof.followed_by):
            continue
        arguments = later.child_by_field_name("arguments")
        first = arguments.named_children[:1] if arguments is not None else []
        tagged = first and re.match(rf"{re.escape(name)}\b", text(first[0]))
        if tagged and _judge(code, source, later, proof).verdict == "passes":
            return f"{callee(later)} at {source.where(later)}"
    return None


def init_option(code: Codebase, proof: InitOptionProof) -> Finding:
    """The SDK is initialised where a page loads it, and no initialisation turns
    `proof.option` on."""
    inits = list(app_calls(code, (proof.call,)))
    if not inits:
        return failed(f"no {proof.call}(...) call was found in the app's code or its pages")
    for source, call in inits:
        arguments = call.child_by_field_name("arguments")
        for child in arguments.named_children if arguments is not None else []:
            keys = mapping(child, source) if child.type in ("object", "identifier") else None
            value = keys.entries.get(proof.option) if keys is not None else None
            if value is not None and text(value) not in ("false", "undefined", "null"):
                return failed(f"{source.where(call)} sets {proof.option}")
    roots, missing = browser_roots(code)
    loaded = reachable(code, roots)
    pages = {page.path for page in code.pages}
    places = ", ".join(source.where(call) for source, call in inits)
    shown_in = [s.where(c) for s, c in inits if s.path in loaded or s.path in pages]
    if shown_in:
        return proven(f"{proof.call} at {', '.join(shown_in)} runs in a page of the app "
                      f"and leaves {proof.option} off")  # fmt: skip
    if missing:
        page, src = missing[0]
        return not_run(f"cannot tell whether a page runs {proof.call} at {places}: "
                       f"{shown(page)} loads {src}, which the project does not hold (a "
                       "build's output)")  # fmt: skip
    if not roots and not pages:
        return failed(f"{proof.call} at {places} runs in no page: the project has no web page "
                      "for it to run in")  # fmt: skip
    return failed(f"no page of the app loads {proof.call} at {places}")


def config_file(
    code: Codebase,
    proof: ConfigProof,
    answers: Sequence[tuple[str, str]] = (),
    interactive: bool = False,
) -> Finding:
    """The file is JSON that validates against the program's schema, holds what the user
    answered in this run, and names a repository the project has."""
    from jsonschema import Draft202012Validator

    data = ProjectRoot(code.root).read_bytes(proof.path)
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
    checked = [f"{proof.path} validates against the program's schema"]
    for field in proof.answered:
        problem = _answered(document.get(field), field, proof, answers, interactive)
        if problem is not None:
            return failed(f"{proof.path}: {problem}")
        checked.append(f"its {field} are what the user answered" if answers
                       else f"its {field} are the program's defaults")  # fmt: skip
    if proof.remote is not None:
        named = str(document.get(proof.remote, ""))
        known = remotes(code.root)
        if not any(same_repository(named, remote) for remote in known):
            have = ", ".join(shown_remote(remote) for remote in known) or "none"
            return failed(f"{proof.path}: {proof.remote} {named!r} is not a git remote of the "
                          f"project (its remotes: {have})")  # fmt: skip
        checked.append(f"its {proof.remote} is the project's remote")
    return proven("; ".join(checked))


def _answered(
    value: Any,
    field: str,
    proof: ConfigProof,
    answers: Sequence[tuple[str, str]],
    interactive: bool,
) -> str | None:
    """Why `value` is not what the user answered (or, with no one to ask, the defaults)."""
    values = value if isinstance(value, list) else [value]
    if not answers:
        if field in proof.defaults and value == proof.defaults[field]:
            return None
        if interactive:
            return f"the {field} were never asked for: no question of this run was answered"
        return (f"the {field} were never asked for (no one could answer in this run) and are "
                "not the program's defaults")  # fmt: skip
    said = [_plain(answer) for _, answer in answers]
    for item in values:
        if not any(_plain(str(item)) in answer for answer in said if _plain(str(item))):
            return f"{field}: {str(item)!r} is not among the user's answers in this run"
    return None


def _plain(words: str) -> str:
    return " ".join(re.sub(r"[^\w]+", " ", words.lower()).split())
