"""Where a name gets its value: its function's parameters, its assignments in its function,
then in its module; and how far a query may follow (`Steps`).

Code the agent wrote is read here, so following it is bounded: a chain of names is followed
`MAX_DEPTH` deep, and one question asks at most `MAX_STEPS` steps in all, each scope's
bindings found once; past that the answer is "cannot tell", never a hang.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from wizard.runner.proofs.codebase import nodes, text

if TYPE_CHECKING:
    from tree_sitter import Node

MAX_DEPTH = 6
MAX_STEPS = 400
T = TypeVar("T")
FUNCTIONS = frozenset({
    "function_definition", "function_declaration", "arrow_function", "function_expression",
    "function", "method_definition", "lambda", "generator_function_declaration",
})  # fmt: skip


@dataclass
class _Work:
    left: int = MAX_STEPS
    found: dict[tuple[object, ...], object] = field(default_factory=dict)


@dataclass(frozen=True)
class Steps:
    """How deep one question follows a value, and the work it has left (shared by every
    step of it)."""

    depth: int = 0
    work: _Work = field(default_factory=_Work)

    @property
    def spent(self) -> bool:
        """Whether this question may follow no further."""
        return self.depth > MAX_DEPTH or self.work.left <= 0

    def next(self) -> Steps:
        """One step further."""
        self.work.left -= 1
        return Steps(self.depth + 1, self.work)

    def once(self, key: tuple[object, ...], make: Callable[[], T]) -> T:
        """`make()`, found once per question for `key`."""
        if key not in self.work.found:
            self.work.found[key] = make()
        return self.work.found[key]  # type: ignore[return-value]


def enclosing_function(node: Node) -> Node | None:
    """The function `node` is in, if any."""
    parent = node.parent
    while parent is not None and parent.type not in FUNCTIONS:
        parent = parent.parent
    return parent


def parameters(function: Node) -> set[str]:
    """The names a function takes, destructured ones included."""
    found: set[str] = set()
    listed = function.child_by_field_name("parameters")
    if listed is None:  # an arrow function of one bare parameter
        single = function.child_by_field_name("parameter")
        return {text(single)} if single is not None else found
    for node in nodes(listed):
        if node.type in ("identifier", "shorthand_property_identifier_pattern"):
            parent = node.parent
            default = parent is not None and parent.child_by_field_name("value") == node
            if not default and (parent is None or parent.type != "type_annotation"):
                found.add(text(node))
    return found


def bindings(area: Node, name: str, steps: Steps) -> list[tuple[Node, str | None]]:
    """The values `name` is given in `area`: `name = v`, `const name = v` (no field), and
    `const { name } = v` (the field `name` of `v`)."""
    key = ("bindings", area.type, area.start_byte, area.end_byte, name)
    return steps.once(key, lambda: list(_bindings(area, name)))


def _bindings(area: Node, name: str) -> list[tuple[Node, str | None]]:
    found: list[tuple[Node, str | None]] = []
    for node in nodes(area):
        if node.type in ("assignment", "assignment_expression", "augmented_assignment"):
            right = node.child_by_field_name("right")
            if text(node.child_by_field_name("left")) == name and right is not None:
                found.append((right, None))
        elif node.type == "variable_declarator":
            target = node.child_by_field_name("name")
            value = node.child_by_field_name("value")
            if target is None or value is None:
                continue
            if text(target) == name:
                found.append((value, None))
            elif target.type == "object_pattern" and name in {
                text(p) for p in target.named_children if p.type.startswith("shorthand")
            }:
                found.append((value, name))
    return found


def in_class(node: Node) -> bool:
    """Whether `node` sits in a class's body (not in one of its methods)."""
    parent = node.parent
    while parent is not None and parent.type not in FUNCTIONS:
        if parent.type in ("class_definition", "class_body", "class_declaration"):
            return True
        parent = parent.parent
    return False
