"""Following a value in the syntax tree to where it comes from.

A static proof does not stop at "the key is there": it asks what reaches the vendor. A value
is the app's (`app`) when it comes from the request (its body, query, cookies, session), from
a parameter, or from an object's field that something in the app sets; it is a `constant`
when it is a literal (the same id for every user), `unset` when it reads a field nothing in
the app ever assigns (the vendor's SDK drops a None), and `unknown` when the query cannot
follow it (a call into other code): "cannot tell", never "wrong". A field nothing sets is
`unset` only when it names the vendor (`posthog_id`): the app alone would set one; any other
may come from a database or a library, and is `unknown`. Mappings are followed alike
(`mappings`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from wizard.runner.proofs.codebase import CALLS, Codebase, Source, nodes, text
from wizard.runner.proofs.scopes import Steps, bindings, enclosing_function, in_class, parameters

if TYPE_CHECKING:
    from tree_sitter import Node

OriginKind = Literal["app", "unknown", "unset", "constant"]
_RANK: dict[OriginKind, int] = {"app": 3, "unknown": 2, "unset": 1, "constant": 0}
_LITERALS = frozenset({
    "integer", "float", "true", "false", "none", "number", "null", "undefined", "regex",
})  # fmt: skip
WRAPPERS = frozenset({
    "parenthesized_expression", "await_expression", "as_expression", "non_null_expression",
    "satisfies_expression", "type_assertion",
})  # fmt: skip
# Where a request's own data is read: what the client sent.
_REQUEST_DATA = frozenset({
    "body", "query", "params", "cookies", "headers", "form", "args", "json", "data", "values",
    "session", "GET", "POST", "COOKIES", "get_json", "query_params", "searchParams", "locals",
})  # fmt: skip
# Names a web framework gives the request, or the session (the client's own data).
_REQUEST_NAMES: dict[str, Literal["request", "data"]] = {
    "request": "request", "req": "request", "ctx": "request", "context": "request",
    "event": "request", "session": "data",
}  # fmt: skip
# Fields a database or an identity provider always sets.
_STANDARD_FIELDS = frozenset({
    "id", "pk", "uuid", "_id", "email", "username", "sub", "user_id", "userId", "uid",
})  # fmt: skip
_CONVERSIONS = frozenset({"str", "String", "int", "Number", "toString", "strip", "trim", "lower"})


@dataclass(frozen=True)
class Origin:
    """Where a value comes from, and the words that say so; `via` marks the request itself
    and the data the client sent in it."""

    kind: OriginKind
    said: str
    via: Literal["request", "data"] | None = None


def join(origins: list[Origin]) -> Origin:
    """One of several values (`a or b`, a ternary): the best of them."""
    return max(origins, key=lambda origin: _RANK[origin.kind])


def origin(
    value: Node | None, source: Source, code: Codebase, steps: Steps | None = None
) -> Origin:
    """Where `value` (in `source`) comes from."""
    steps = steps or Steps()
    while value is not None and value.type in WRAPPERS:
        value = value.named_children[-1] if value.named_children else None
    if value is None or steps.spent:
        return Origin("unknown", "a value the query cannot follow")
    written = " ".join(text(value).split())[:80]
    kind = value.type
    if kind in _LITERALS or plain_string(value):
        return Origin("constant", f"the constant {written}")
    if kind in ("string", "template_string"):  # with values put in
        parts = [origin(p, source, code, steps.next()) for p in _interpolated(value)]
        best = join(parts)
        return Origin(best.kind, written) if best.kind == "app" else best
    if kind in ("boolean_operator", "binary_expression", "binary_operator"):
        sides = [value.child_by_field_name("left"), value.child_by_field_name("right")]
        return join([origin(side, source, code, steps.next()) for side in sides])
    if kind in ("conditional_expression", "ternary_expression"):
        branches = value.named_children[-2:] if kind == "ternary_expression" else (
            value.named_children[::2])  # fmt: skip
        return join([origin(b, source, code, steps.next()) for b in branches])
    if kind in ("identifier", "shorthand_property_identifier"):
        return _name(value, source, code, steps)
    if kind in ("attribute", "member_expression", "subscript", "subscript_expression"):
        return _field(value, source, code, steps)
    if kind in CALLS:
        return _call(value, source, code, steps)
    return Origin("unknown", f"{written}, which the query cannot follow")


def plain_string(node: Node) -> bool:
    """Whether `node` is a string with nothing put in it (a constant)."""
    if node.type == "concatenated_string":
        return all(plain_string(child) for child in node.named_children)
    return node.type in ("string", "template_string") and not list(_interpolated(node))


def _interpolated(node: Node) -> Iterator[Node]:
    for child in node.named_children:
        if child.type in ("interpolation", "template_substitution") and child.named_children:
            yield child.named_children[0]


def _call(call: Node, source: Source, code: Codebase, steps: Steps) -> Origin:
    """A conversion (`str(x)`, `x.toString()`) or a mapping's `get("k")` is followed; any
    other call is code the query does not run."""
    function = call.child_by_field_name("function")
    arguments = call.child_by_field_name("arguments")
    given = [a for a in (arguments.named_children if arguments is not None else [])
             if a.type != "comment"]  # fmt: skip
    name = text(function).rsplit(".", 1)[-1]
    receiver = function.child_by_field_name("object") if function is not None else None
    if name in _CONVERSIONS:
        target = receiver if receiver is not None and not given else next(iter(given), None)
        return origin(target, source, code, steps.next())
    if name == "get" and receiver is not None and given and plain_string(given[0]):
        return _chain(receiver, string_key(given[0]), source, code, steps)
    if name in _REQUEST_DATA and receiver is not None:  # request.get_json()
        return _chain(receiver, name, source, code, steps)
    return Origin("unknown", f"the value {' '.join(text(call).split())[:80]} returns, which "
                  "the query cannot follow")  # fmt: skip


def member(node: Node) -> Node | None:
    """The name an attribute or member expression reads (`b` of `a.b`)."""
    return node.child_by_field_name("attribute") or node.child_by_field_name("property")


def string_key(node: Node) -> str:
    parts = ("string_content", "string_fragment")
    return "".join(text(child) for child in node.named_children if child.type in parts)


def _field(value: Node, source: Source, code: Codebase, steps: Steps) -> Origin:
    if value.type in ("attribute", "member_expression"):
        holder = value.child_by_field_name("object")
        field = text(
            value.child_by_field_name("attribute") or value.child_by_field_name("property")
        )
    else:
        holder = value.child_by_field_name("value") or value.child_by_field_name("object")
        index = value.child_by_field_name("subscript") or value.child_by_field_name("index")
        if index is None or not plain_string(index):
            return Origin("unknown", f"{text(value)[:80]}, which the query cannot follow")
        field = string_key(index)
    return _chain(holder, field, source, code, steps)


def _chain(holder: Node | None, field: str, source: Source, code: Codebase, steps: Steps) -> Origin:
    """`holder.field`: what the client sent in the request is the app's; another object's
    field is the app's when something in the app sets it."""
    written = f"{' '.join(text(holder).split())[:60]}.{field}"
    base = origin(holder, source, code, steps.next())
    if base.via == "data" or (base.via == "request" and field in _REQUEST_DATA):
        return Origin("app", f"{written}, from the request", "data")
    if base.via == "request":  # what the framework puts on it: `req.user`, `request.user`
        return Origin("app", f"{written}, the request's")
    if base.kind in ("constant", "unset"):
        return base
    if field in _STANDARD_FIELDS or steps.once(("set", field), lambda: field_is_set(code, field)):
        return Origin("app", f"{written}, a field the app sets")
    if re.search("posthog|distinct", field, re.IGNORECASE):  # only the app would set it
        return Origin("unset", f"{written}, a field nothing in the app sets")
    return Origin("unknown", f"{written}: nothing in the app's code sets {field}, which may "
                  "come from elsewhere (a database, a library)")  # fmt: skip


def _name(name: Node, source: Source, code: Codebase, steps: Steps) -> Origin:
    """A name: a parameter of its function, or what it was given (in its function, then in
    its module); unbound, a framework's request (`request`, `session`)."""
    written = text(name)
    via = _REQUEST_NAMES.get(written)
    scope = enclosing_function(name)
    if scope is not None and written in parameters(scope):
        return Origin("app", f"{written}, a parameter of its function", via)
    for area in (scope, source.root):
        if area is None:
            continue
        bound = [origin(value, source, code, steps.next()) if field is None
                 else _chain(value, field, source, code, steps.next())
                 for value, field in bindings(area, written, steps)]  # fmt: skip
        if bound:
            return join(bound)
    if via is not None:
        return Origin("app", f"{written}, the request", via)
    return Origin("unknown", f"{written}, which is not given a value where it is used")


def field_is_set(code: Codebase, field: str) -> bool:
    """Whether anything in the app assigns `field` a value: `x.field = v`, `field=v` in a
    call, `{"field": v}`, a class attribute or a model's column, or a database schema."""
    needle = field.encode()
    for source in code.sources:
        for node in nodes(source.root):
            if _sets(node, field):
                return True
    for path in code.files:
        if path.endswith((".sql", ".prisma", ".graphql")) and needle in (code.read(path) or b""):
            return True
    return False


def _sets(node: Node, field: str) -> bool:
    kind = node.type
    if kind in ("assignment", "assignment_expression"):
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if right is not None and (right.type in ("none", "null", "undefined")):
            return False
        if left is None:
            return False
        if left.type == "identifier":  # a class attribute or column
            return text(left) == field and in_class(node)
        name = left.child_by_field_name("attribute") or left.child_by_field_name("property")
        return text(name) == field
    if kind == "keyword_argument":
        return text(node.child_by_field_name("name")) == field
    if kind == "pair":
        key = node.child_by_field_name("key")
        value = node.child_by_field_name("value")
        reads_itself = value is not None and text(value).endswith(f".{field}")
        return key is not None and (text(key).strip("'\"") == field) and not reads_itself
    if (
        kind == "string"
        and node.parent is not None
        and node.parent.type in ("argument_list", "arguments", "keyword_argument")
    ):  # Column("field"), setattr(user, "field", v), AddField(name="field")
        call = node.parent.parent if node.parent.type != "keyword_argument" else None
        reads = call is not None and text(call.child_by_field_name("function")).rsplit(".", 1)[
            -1
        ] in ("getattr", "hasattr", "get", "pop", "getItem")
        return string_key(node) == field and not reads
    if kind in ("public_field_definition", "field_definition"):
        return text(node.child_by_field_name("name") or node.child_by_field_name("property")) == (
            field
        )  # fmt: skip
    return False
