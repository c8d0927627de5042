"""Following a value in the syntax tree to where it comes from.

A static proof does not stop at "the key is there": it asks what reaches the vendor. A value
is the app's (`app`) when it comes from the request (its body, query, cookies, session), from
a parameter, or from an object's field that something in the app sets; it is a `constant`
when it is a literal (the same id for every user), `unset` when it reads a field nothing in
the app ever assigns (the vendor's SDK drops a None), and `unknown` when the query cannot
follow it (a call into other code): "cannot tell", never "wrong".

Mappings are followed the same way: a literal, a name bound to one, and keys added to it
later (`m["k"] = v`, `m.k = v`, `m.update(...)`, `Object.assign(m, ...)`), as code builds
metadata under a guard.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from wizard.runner.proofs.codebase import CALLS, Codebase, Source, nodes, text

if TYPE_CHECKING:
    from tree_sitter import Node

OriginKind = Literal["app", "unknown", "unset", "constant"]
_RANK: dict[OriginKind, int] = {"app": 3, "unknown": 2, "unset": 1, "constant": 0}
_LITERALS = frozenset({
    "integer", "float", "true", "false", "none", "number", "null", "undefined", "regex",
})  # fmt: skip
_WRAPPERS = frozenset({
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
_STANDARD_FIELDS = frozenset({"id", "pk", "uuid", "_id", "email", "username", "sub"})
_CONVERSIONS = frozenset({"str", "String", "int", "Number", "toString", "strip", "trim", "lower"})
_FUNCTIONS = frozenset({
    "function_definition", "function_declaration", "arrow_function", "function_expression",
    "function", "method_definition", "lambda", "generator_function_declaration",
})  # fmt: skip
_MAX_DEPTH = 6


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


def origin(value: Node | None, source: Source, code: Codebase, depth: int = 0) -> Origin:
    """Where `value` (in `source`) comes from."""
    while value is not None and value.type in _WRAPPERS:
        value = value.named_children[-1] if value.named_children else None
    if value is None or depth > _MAX_DEPTH:
        return Origin("unknown", "a value the query cannot follow")
    written = " ".join(text(value).split())[:80]
    kind = value.type
    if kind in _LITERALS or _plain_string(value):
        return Origin("constant", f"the constant {written}")
    if kind in ("string", "template_string"):  # with values put in
        parts = [origin(p, source, code, depth + 1) for p in _interpolated(value)]
        best = join(parts)
        return Origin(best.kind, written) if best.kind == "app" else best
    if kind in ("boolean_operator", "binary_expression"):
        sides = [value.child_by_field_name("left"), value.child_by_field_name("right")]
        return join([origin(side, source, code, depth + 1) for side in sides])
    if kind in ("conditional_expression", "ternary_expression"):
        branches = value.named_children[-2:] if kind == "ternary_expression" else (
            value.named_children[::2])  # fmt: skip
        return join([origin(b, source, code, depth + 1) for b in branches])
    if kind in ("identifier", "shorthand_property_identifier"):
        return _name(value, source, code, depth)
    if kind in ("attribute", "member_expression", "subscript", "subscript_expression"):
        return _field(value, source, code, depth)
    if kind in CALLS:
        return _call(value, source, code, depth)
    return Origin("unknown", f"{written}, which the query cannot follow")


def _plain_string(node: Node) -> bool:
    if node.type == "concatenated_string":
        return all(_plain_string(child) for child in node.named_children)
    return node.type in ("string", "template_string") and not list(_interpolated(node))


def _interpolated(node: Node) -> Iterator[Node]:
    for child in node.named_children:
        if child.type in ("interpolation", "template_substitution") and child.named_children:
            yield child.named_children[0]


def _call(call: Node, source: Source, code: Codebase, depth: int) -> Origin:
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
        return origin(target, source, code, depth + 1)
    if name == "get" and receiver is not None and given and _plain_string(given[0]):
        return _chain(receiver, _key(given[0]), source, code, depth)
    if name in _REQUEST_DATA and receiver is not None:  # request.get_json()
        return _chain(receiver, name, source, code, depth)
    return Origin("unknown", f"the value {' '.join(text(call).split())[:80]} returns, which "
                  "the query cannot follow")  # fmt: skip


def _member(node: Node) -> Node | None:
    """The name an attribute or member expression reads (`b` of `a.b`)."""
    return node.child_by_field_name("attribute") or node.child_by_field_name("property")


def _key(node: Node) -> str:
    parts = ("string_content", "string_fragment")
    return "".join(text(child) for child in node.named_children if child.type in parts)


def _field(value: Node, source: Source, code: Codebase, depth: int) -> Origin:
    if value.type in ("attribute", "member_expression"):
        holder = value.child_by_field_name("object")
        field = text(
            value.child_by_field_name("attribute") or value.child_by_field_name("property")
        )
    else:
        holder = value.child_by_field_name("value") or value.child_by_field_name("object")
        index = value.child_by_field_name("subscript") or value.child_by_field_name("index")
        if index is None or not _plain_string(index):
            return Origin("unknown", f"{text(value)[:80]}, which the query cannot follow")
        field = _key(index)
    return _chain(holder, field, source, code, depth)


def _chain(holder: Node | None, field: str, source: Source, code: Codebase, depth: int) -> Origin:
    """`holder.field`: what the client sent in the request is the app's; another object's
    field is the app's when something in the app sets it."""
    written = f"{' '.join(text(holder).split())[:60]}.{field}"
    base = origin(holder, source, code, depth + 1)
    if base.via == "data" or (base.via == "request" and field in _REQUEST_DATA):
        return Origin("app", f"{written}, from the request", "data")
    if base.via == "request":  # what the framework puts on it: `req.user`, `request.user`
        return Origin("app", f"{written}, the request's")
    if base.kind in ("constant", "unset"):
        return base
    if field in _STANDARD_FIELDS or field_is_set(code, field):  # an object the app fills
        return Origin("app", f"{written}, a field the app sets")
    return Origin("unset", f"{written}, a field nothing in the app sets")


def _name(name: Node, source: Source, code: Codebase, depth: int) -> Origin:
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
        bound = [origin(value, source, code, depth + 1) if field is None
                 else _chain(value, field, source, code, depth + 1)
                 for value, field in bindings(area, written)]  # fmt: skip
        if bound:
            return join(bound)
    if via is not None:
        return Origin("app", f"{written}, the request", via)
    return Origin("unknown", f"{written}, which is not given a value where it is used")


def enclosing_function(node: Node) -> Node | None:
    """The function `node` is in, if any."""
    parent = node.parent
    while parent is not None and parent.type not in _FUNCTIONS:
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


def bindings(area: Node, name: str) -> Iterator[tuple[Node, str | None]]:
    """The values `name` is given in `area`: `name = v`, `const name = v` (no field), and
    `const { name } = v` (the field `name` of `v`)."""
    for node in nodes(area):
        if node.type in ("assignment", "assignment_expression", "augmented_assignment"):
            right = node.child_by_field_name("right")
            if text(node.child_by_field_name("left")) == name and right is not None:
                yield right, None
        elif node.type == "variable_declarator":
            target = node.child_by_field_name("name")
            value = node.child_by_field_name("value")
            if target is None or value is None:
                continue
            if text(target) == name:
                yield value, None
            elif target.type == "object_pattern" and name in {
                text(p) for p in target.named_children if p.type.startswith("shorthand")
            }:
                yield value, name


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
            return text(left) == field and _in_class(node)
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
        and node.parent.type in ("argument_list", "arguments")
    ):  # Column("field"), setattr(user, "field", v), .set("field", v)
        return _key(node) == field
    if kind in ("public_field_definition", "field_definition"):
        return text(node.child_by_field_name("name") or node.child_by_field_name("property")) == (
            field
        )  # fmt: skip
    return False


def _in_class(node: Node) -> bool:
    parent = node.parent
    while parent is not None and parent.type not in _FUNCTIONS:
        if parent.type in ("class_definition", "class_body", "class_declaration"):
            return True
        parent = parent.parent
    return False


@dataclass(frozen=True)
class Keys:
    """A dictionary or object as code builds it: its keys with their values, and whether
    every part of it was followed (`complete`: no `**other` the query could not read)."""

    entries: dict[str, Node | None]
    complete: bool = True


def mapping(value: Node | None, source: Source, depth: int = 0) -> Keys | None:
    """`value` followed to the mapping it is: a literal, `dict(...)`, or a name bound to one
    and given keys later; None when it is something else (built by other code)."""
    while value is not None and value.type in _WRAPPERS:
        value = value.named_children[-1] if value.named_children else None
    if value is None or depth > _MAX_DEPTH:
        return None
    if value.type in ("dictionary", "object"):
        return _literal(value, source, depth)
    if value.type in CALLS and text(value.child_by_field_name("function")) == "dict":
        return _literal(value.child_by_field_name("arguments"), source, depth)
    if value.type not in ("identifier", "shorthand_property_identifier"):
        return None
    name = text(value)
    scope = enclosing_function(value)
    for area in (scope, source.root):
        if area is None:
            continue
        bound = [mapping(v, source, depth + 1) for v, field in bindings(area, name) if not field]
        if bound:
            found = Keys({}, all(b is not None and b.complete for b in bound))
            for part in (b for b in bound if b is not None):
                found.entries.update(part.entries)
            for key, added in _added(area, name, source):
                found.entries[key] = added
            return found if any(b is not None for b in bound) else None
    return None


def _literal(node: Node | None, source: Source, depth: int) -> Keys:
    found = Keys({})
    complete = True
    for child in node.named_children if node is not None else []:
        if child.type == "pair":
            found.entries[_key_name(child.child_by_field_name("key"))] = (
                child.child_by_field_name("value"))  # fmt: skip
        elif child.type == "keyword_argument":  # dict(k=v)
            found.entries[text(child.child_by_field_name("name"))] = child.child_by_field_name(
                "value"
            )
        elif child.type == "shorthand_property_identifier":
            found.entries[text(child)] = child
        elif child.type in ("dictionary", "object"):  # update({...}), dict({...})
            found.entries.update(_literal(child, source, depth + 1).entries)
        elif child.type in ("dictionary_splat", "spread_element", "identifier"):
            spread = mapping(child.named_children[-1] if child.named_children else child, source,
                             depth + 1)  # fmt: skip
            if spread is None:
                complete = False
            else:
                found.entries.update(spread.entries)
                complete = complete and spread.complete
    return Keys(found.entries, complete)


def _key_name(node: Node | None) -> str:
    """A dictionary or object key as written: a string's content or an identifier."""
    if node is not None and node.type in ("string", "template_string"):
        return _key(node)
    return text(node)


def _added(area: Node, name: str, source: Source) -> Iterator[tuple[str, Node | None]]:
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
                if index is not None and _plain_string(index):
                    yield _key(index), node.child_by_field_name("right")
            elif left.type in ("attribute", "member_expression"):
                yield text(_member(left)), node.child_by_field_name("right")
        elif node.type in CALLS:
            written = "".join(text(node.child_by_field_name("function")).split())
            arguments = node.child_by_field_name("arguments")
            given = list(arguments.named_children) if arguments is not None else []
            if written == f"{name}.update" and arguments is not None:
                yield from _literal(arguments, source, 0).entries.items()
            elif written == "Object.assign" and given and text(given[0]) == name:
                for argument in given[1:]:
                    if argument.type == "object":
                        yield from _literal(argument, source, 0).entries.items()
