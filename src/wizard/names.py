"""File names as wizard prints them.

A name is bytes to the system: it can hold bytes that are not UTF-8 (kept in a `str` as
escaped surrogates) and control characters, a carriage return or an escape sequence that
would rewrite the user's terminal. Everything wizard prints of a name the agent chose goes
through `shown` first.
"""

from __future__ import annotations


def shown(name: str) -> str:
    """`name` printable: bytes that are not UTF-8 as `\\xff`, control and invisible
    characters as `\\r`, `\\x1b`, `\\u200b`."""
    text = name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return "".join(
        char if char.isprintable() else char.encode("unicode_escape").decode("ascii")
        for char in text
    )
