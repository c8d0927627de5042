"""Whether an error is a Ctrl-C in disguise.

Python raises KeyboardInterrupt wherever the main thread is when SIGINT arrives, and that can
be inside a C extension calling back into Python: pydantic_core, building a model's
validator at import, turns it into a `SchemaError` that keeps only the text, ending in a
line `KeyboardInterrupt: `. Such an error is the user pressing Ctrl-C, and ends as one.
"""

from __future__ import annotations

_NAME = KeyboardInterrupt.__name__


def is_ctrl_c(error: BaseException) -> bool:
    """Whether `error` is a KeyboardInterrupt, was raised from one, or is an extension's
    error that says on its last line that one interrupted it."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, KeyboardInterrupt):
            return True
        lines = str(current).strip().splitlines()
        if lines and lines[-1].strip().rstrip(":") == _NAME:
            return True
        current = current.__cause__
    return False
