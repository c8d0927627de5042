"""`read`, `write` and `edit`: wizard's file tools, the same for every engine.

They replace the engines' own file tools (pi's, which normalise a name and try look-alike
names before opening it; Claude's `Read`/`Write`/`Edit`), so the name the fence judges is the
name opened, through `ProjectRoot`: at the moment of use, beneath the project, no link out,
regular files only. Their shapes follow pi's (`read {path, offset?, limit?}`,
`write {path, content}`, `edit {path, edits: [{oldText, newText}]}`, with pi's older
`oldText`/`newText` form accepted too). They read and write text; an image or other binary
file is refused.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from wizard.tools.base import HostTool, ToolResult, schema
from wizard.tools.paths import ProjectRoot, Refusal

MAX_LINES = 2000
MAX_READ_CHARS = 50 * 1024
_BOM = "\ufeff"


def _error(text: str) -> ToolResult:
    return ToolResult(f"Error: {text}", is_error=True)


def _text(root: ProjectRoot, path: str) -> str | ToolResult:
    """The text of the file `path`, or the error to give back (refused, missing, binary)."""
    data = root.read_bytes(path)
    if isinstance(data, Refusal):
        return _error(data.reason)
    if b"\0" in data[:8192]:
        return _error(f"{path} is a binary file; the file tools read and write text only.")
    return data.decode("utf-8", errors="replace")


def _number(value: Any, name: str) -> int | ToolResult | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 1:
        return _error(f"{name} must be a whole number of at least 1.")
    return int(value)


def read_text(root: ProjectRoot, args: Mapping[str, Any]) -> ToolResult:
    """The lines of a text file, from `offset` (1-based), at most `limit` or the size cap."""
    path = str(args.get("path") or "")
    offset, limit = _number(args.get("offset"), "offset"), _number(args.get("limit"), "limit")
    if isinstance(offset, ToolResult):
        return offset
    if isinstance(limit, ToolResult):
        return limit
    text = _text(root, path)
    if isinstance(text, ToolResult):
        return text
    lines = text.split("\n")
    start = (offset or 1) - 1
    if start >= len(lines) and lines != [""]:
        return _error(f"offset {offset} is past the end of {path} ({len(lines)} lines).")
    end = min(len(lines), start + min(limit or MAX_LINES, MAX_LINES))
    shown: list[str] = []
    size = 0
    for line in lines[start:end]:
        if size + len(line) + 1 > MAX_READ_CHARS and shown:
            break
        shown.append(line)
        size += len(line) + 1
    body = "\n".join(shown)
    last = start + len(shown)
    if last < len(lines):
        body += f"\n\n[Showing lines {start + 1}-{last} of {len(lines)}. Use offset={last + 1}"
        body += " to continue.]"
    return ToolResult(body)


def write_text(root: ProjectRoot, args: Mapping[str, Any]) -> ToolResult:
    """Create or replace a text file, atomically; its folders are made."""
    path, content = args.get("path"), args.get("content")
    if not isinstance(path, str) or not isinstance(content, str):
        return _error("write needs a path and a content string.")
    written = root.write_bytes(path, content.encode())
    if isinstance(written, Refusal):
        return _error(written.reason)
    return ToolResult(f"Successfully wrote {len(content.encode())} bytes to {path}")


def _edits(args: Mapping[str, Any]) -> list[tuple[str, str]] | ToolResult:
    edits = args.get("edits")
    if isinstance(edits, list):
        pairs = [(e.get("oldText"), e.get("newText")) for e in edits if isinstance(e, dict)]
    else:
        pairs = [(args.get("oldText"), args.get("newText"))]
    if not pairs or any(not isinstance(a, str) or not isinstance(b, str) for a, b in pairs):
        return _error("edit needs edits: [{oldText, newText}], each two strings.")
    if any(not old for old, _ in pairs):
        return _error("an edit's oldText may not be empty.")
    return [(str(a), str(b)) for a, b in pairs]


def apply_edits(original: str, edits: list[tuple[str, str]], path: str) -> str | ToolResult:
    """`original` with each (oldText, newText) replaced once, matched against the original."""
    spans = []
    for old, new in edits:
        at = original.find(old)
        if at < 0:
            return _error(f"could not find the oldText of an edit in {path}; it must match the "
                          "file exactly (read it again).")  # fmt: skip
        if original.find(old, at + 1) >= 0:
            return _error(f"an edit's oldText occurs more than once in {path}; make it unique.")
        spans.append((at, at + len(old), new))
    spans.sort()
    for (_, end, _), (start, _, _) in itertools.pairwise(spans):
        if start < end:
            return _error(f"two edits overlap in {path}; merge them into one.")
    out, position = [], 0
    for start, end, new in spans:
        out += [original[position:start], new]
        position = end
    return "".join([*out, original[position:]])


def edit_text(root: ProjectRoot, args: Mapping[str, Any]) -> ToolResult:
    """Replace exact, unique pieces of a text file; line endings and a BOM are kept."""
    path = str(args.get("path") or "")
    edits = _edits(args)
    if isinstance(edits, ToolResult):
        return edits
    text = _text(root, path)
    if isinstance(text, ToolResult):
        return text
    bom = text.startswith(_BOM)
    crlf = "\r\n" in text
    body = text.removeprefix(_BOM).replace("\r\n", "\n")
    lf_edits = [(old.replace("\r\n", "\n"), new.replace("\r\n", "\n")) for old, new in edits]
    changed = apply_edits(body, lf_edits, path)
    if isinstance(changed, ToolResult):
        return changed
    if changed == body:
        return _error(f"the edits leave {path} unchanged.")
    result = (_BOM if bom else "") + (changed.replace("\n", "\r\n") if crlf else changed)
    written = root.write_bytes(path, result.encode())
    if isinstance(written, Refusal):
        return _error(written.reason)
    return ToolResult(f"Successfully replaced {len(edits)} block(s) in {path}.")


def file_tools(root: ProjectRoot) -> list[HostTool]:
    """`read`, `write` and `edit` over the project `root`."""

    async def read(args: Mapping[str, Any]) -> ToolResult:
        return read_text(root, args)

    async def write(args: Mapping[str, Any]) -> ToolResult:
        return write_text(root, args)

    async def edit(args: Mapping[str, Any]) -> ToolResult:
        return edit_text(root, args)

    path = {"type": "string", "description": "Path of the file, relative to the project"}
    number = {"type": "integer", "minimum": 1}
    replacement = schema({"oldText": {"type": "string"}, "newText": {"type": "string"}},
                         ["oldText", "newText"])  # fmt: skip
    return [
        HostTool(
            "read",
            f"Read a text file of the project. Shows at most {MAX_LINES} lines or "
            f"{MAX_READ_CHARS // 1024} KB; use offset (1-based line) and limit for more.",
            schema({"path": path, "offset": number, "limit": number}, ["path"]),
            read,
        ),
        HostTool(
            "write",
            "Create or overwrite a text file of the project (its folders are made). Use edit "
            "for changes to an existing file.",
            schema({"path": path, "content": {"type": "string"}}, ["path", "content"]),
            write,
        ),
        HostTool(
            "edit",
            "Edit a file with exact text replacement. Every edits[].oldText must match a "
            "unique, non-overlapping part of the original file; merge nearby changes.",
            schema(
                {
                    "path": path,
                    "edits": {"type": "array", "items": replacement, "minItems": 1},
                    # pi's older single-replacement form
                    "oldText": {"type": "string"},
                    "newText": {"type": "string"},
                },
                ["path"],
            ),
            edit,
        ),
    ]
