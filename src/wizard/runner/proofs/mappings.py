"""Following a mapping (the metadata a call passes) to the keys it holds: a literal,
`dict(...)`, or a name bound to one and given keys later (`m["k"] = v`, `m.k = v`,
`m.update(...)`, `Object.assign(m, ...)`, spreads), as code builds metadata under a guard.
What the query cannot follow leaves the mapping incomplete, and the proof says it cannot
tell."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from wizard.runner.proofs.codebase import CALLS, Source, nodes, text
from wizard.runner.proofs.scopes import Steps, bindings, enclosing_function
from wizard.runner.proofs.values import WRAPPERS, member, plain_string, string_key

if TYPE_CHECKING:
    from tree_sitter import Node


@dataclass(frozen=True)
class Keys:
    """A dictionary or object as code builds it: its keys with their values, and whether
    every part of it was followed (`complete`: no `**other` the query could not read)."""

    entries: dict[str, Node | None]
    complete: bool = True


def mapping(value: Node | None, source: Source, steps: Steps | None = None) -> Keys | None:
    """`value` followed to the mapping it is: a literal, `dict(...)`, or a name bound to one
    and given keys later; None when it is something else (built by other code)."""
    steps = steps or Steps()
    while value is not None and value.type in WRAPPERS:
        value = value.named_children[-1] if value.named_children else None
    if value is None or steps.spent:
        return None
    if value.type in ("dictionary", "object"):
        return _literal(value, source, steps)
    if value.type in CALLS and text(value.child_by_field_name("function")) == "dict":
        return _literal(value.child_by_field_name("arguments"), source, steps)
    if value.type not in ("identifier", "shorthand_property_identifier"):
        return None
    name = text(value)
    scope = enclosing_function(value)
    for area in (scope, source.root):
        if area is None:
            continue
        bound = [mapping(v, source, steps.next()) for v, field in bindings(area, name, steps)
                 if not field]  # fmt: skip
        if bound:
            found = Keys({}, all(b is not None and b.complete for b in bound))
            for part in (b for b in bound if b is not None):
                found.entries.update(part.entries)
            for key, added in _added(area, name, source, steps):
                found.entries[key] = added
            return found if any(b is not None for b in bound) else None
    return None


def _literal(node: Node | None, source: Source, steps: Steps) -> Keys:
    found = Keys({})
    complete = True
    for child in node.named_children if node is not None else []:
        if child.type == "pair":
            found.entries[key_name(child.child_by_field_name("key"))] = (
                child.child_by_field_name("value"))  # fmt: skip
        elif child.type == "keyword_argument":  # dict(k=v)
            found.entries[text(child.child_by_field_name("name"))] = child.child_by_field_name(
                "value"
            )
        elif child.type == "shorthand_property_identifier":
            found.entries[text(child)] = child
        elif child.type in ("dictionary", "object"):  # update({...}), dict({...})
            found.entries.update(_literal(child, source, steps.next()).entries)
        elif child.type in ("dictionary_splat", "spread_element", "identifier"):
            spread = mapping(child.named_children[-1] if child.named_children else child, source,
                             steps.next())  # fmt: skip
            if spread is None:
                complete = False
            else:
                found.entries.update(spread.entries)
                complete = complete and spread.complete
    return Keys(found.entries, complete)


def key_name(node: Node | None) -> str:
    """A dictionary or object key as written: a string's content or an identifier."""
    if node is not None and node.type in ("string", "template_string"):
        return string_key(node)
    return text(node)


def _added(
    area: Node, name: str, source: Source, steps: Steps
) -> Iterator[tuple[str, Node | None]]:
    """Keys given to the mapping `name` after it was made: `name["k"] = v`, `name.k = v`,
    `name.update({...})` / `name.update(k=v)`, `Object.assign(name, {...})`."""
    for node in nodes(area):
        if node.type in ("assignment", "assignment_expression"):
            left = node.child_by_field_name("left")
            if left is None or text(left.child_by_field_name("object") or
                                    left.child_by_field_name("value")) != name:  # fmt: skip
                continue
            if left.type in ("subscript", "subscript_expression"):
                index = left.child_by_field_name("subscript") or left.child_by_field_name("index")
                if index is not None and plain_string(index):
                    yield string_key(index), node.child_by_field_name("right")
            elif left.type in ("attribute", "member_expression"):
                yield text(member(left)), node.child_by_field_name("right")
        elif node.type in CALLS:
            written = "".join(text(node.child_by_field_name("function")).split())
            arguments = node.child_by_field_name("arguments")
            given = list(arguments.named_children) if arguments is not None else []
            if written == f"{name}.update" and arguments is not None:
                yield from _literal(arguments, source, steps.next()).entries.items()
            elif written == "Object.assign" and given and text(given[0]) == name:
                for argument in given[1:]:
                    if argument.type == "object":
                        yield from _literal(argument, source, steps.next()).entries.items()
