"""The markers an agent writes, and the pure parsers that read them.

One marker table (`Marker`) feeds both the parsers here and any prompt text that teaches
the markers to a model. Everything in this module is pure: no I/O, no global state.

The skill stop marker follows the TypeScript wizard's regex `/\\[ABORT\\]\\s*(.+?)(?:\\n|$)/`
exactly, including JavaScript's notion of whitespace (for `\\s` and `trim()`) and of a line
terminator (`.` never matches `\\n`, `\\r`, U+2028 or U+2029). Python's own `\\s`, `.` and
`str.strip()` differ from JavaScript's on several code points, so the classes are spelled
out below instead of borrowed from `re`.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal


class Marker(StrEnum):
    """Every marker an agent may write, with the literal text it writes."""

    STATUS = "[STATUS]"
    ERROR_MCP_MISSING = "[ERROR-MCP-MISSING]"
    ERROR_RESOURCE_MISSING = "[ERROR-RESOURCE-MISSING]"
    SKILL_INSTALL_FAILED = "[SKILL-INSTALL-FAILED]"
    ABORT = "[ABORT]"
    WIZARD_REMARK = "[WIZARD-REMARK]"
    BENCHMARK = "[BENCHMARK]"
    DASHBOARD_URL = "[DASHBOARD_URL]"
    NOTEBOOK_URL = "[NOTEBOOK_URL]"


MARKER_MEANINGS: dict[Marker, str] = {
    Marker.STATUS: "a short progress line shown to the user: `[STATUS] <what you are doing>`",
    Marker.ERROR_MCP_MISSING: "the PostHog MCP server cannot be reached",
    Marker.ERROR_RESOURCE_MISSING: "a resource the setup needs cannot be reached",
    Marker.SKILL_INSTALL_FAILED: "installing a skill failed and you are going on without it",
    Marker.ABORT: (
        "you cannot complete the program and stop on purpose; write `[ABORT] <reason>` on a "
        "line of its own and do nothing else"
    ),
    Marker.WIZARD_REMARK: "your end-of-run reflection, only when asked for it",
    Marker.BENCHMARK: "a benchmark log line",
    Marker.DASHBOARD_URL: "`[DASHBOARD_URL] <url>` of a dashboard you created",
    Marker.NOTEBOOK_URL: "`[NOTEBOOK_URL] <url>` of a notebook you created",
}

DEFAULT_GATEWAY_MARKER = "[posthog:abort]"
GATEWAY_FALLBACK_REASON = "The AI gateway refused this request."

REMARK_INSTRUCTION = (
    f"Reply with a single line that starts with {Marker.WIZARD_REMARK} and no other lines. "
    "In that line, state briefly what information or guidance would have been useful to have "
    "in the integration prompt or documentation for this run — specifically anything that "
    "would have prevented tool failures, erroneous edits, or other wasted turns."
)

# JavaScript's `\s` (and the set `String.prototype.trim` removes): ECMAScript WhiteSpace and
# LineTerminator. Python's `\s` adds U+001C-U+001F and U+0085 and lacks U+FEFF.
_JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_JS_WS_CLASS = "[" + re.escape(_JS_WHITESPACE) + "]"
# JavaScript's `.` without the `s` flag: anything but the four line terminators.
_JS_DOT = "[^\n\r\u2028\u2029]"

_SKILL_ABORT = re.compile(re.escape(Marker.ABORT) + _JS_WS_CLASS + "*(" + _JS_DOT + "+?)(?:\n|\\Z)")
_REMARK = re.compile(re.escape(Marker.WIZARD_REMARK) + r"\s*(.+?)(?:\n|\Z)", re.DOTALL)
_API_ERROR = re.compile(r"API Error: [^\n]+")

AbortSource = Literal["skill", "gateway_policy"]


def js_trim(text: str) -> str:
    """Trim `text` exactly as JavaScript's `String.prototype.trim` does."""
    return text.strip(_JS_WHITESPACE)


def skill_abort_reason(text: str) -> str | None:
    """Return the reason of the first `[ABORT] <reason>` in `text`, or None.

    A bare marker, or one followed only by whitespace, is not an abort.
    """
    match = _SKILL_ABORT.search(text)
    if match is None:
        return None
    return js_trim(match.group(1)) or None


def gateway_refusal_reason(text: str, marker: str = DEFAULT_GATEWAY_MARKER) -> str | None:
    """Return the reason of the gateway's refusal marker in `text`, or None.

    The reason is the rest of the marker's line, trimmed; a bare marker gets a fixed reason.
    """
    offset = text.find(marker)
    if offset < 0:
        return None
    rest = text[offset + len(marker) :].split("\n", 1)[0]
    return js_trim(rest) or GATEWAY_FALLBACK_REASON


@dataclass(frozen=True)
class StopMarker:
    """The first stop marker found in a text: its reason, who wrote it, and where it starts."""

    reason: str
    source: AbortSource
    offset: int


def first_stop_marker(
    text: str, gateway_marker: str = DEFAULT_GATEWAY_MARKER, *, skill_markers: bool = True
) -> StopMarker | None:
    """Return whichever stop marker starts first in `text`: a skill's or the gateway's.

    With `skill_markers=False` only the gateway's marker is looked for.
    """
    found: list[StopMarker] = []
    skill = _SKILL_ABORT.search(text) if skill_markers else None
    if skill is not None and (reason := js_trim(skill.group(1))):
        found.append(StopMarker(reason=reason, source="skill", offset=skill.start()))
    gateway_reason = gateway_refusal_reason(text, gateway_marker)
    if gateway_reason is not None:
        offset = text.find(gateway_marker)
        found.append(StopMarker(reason=gateway_reason, source="gateway_policy", offset=offset))
    return min(found, key=lambda marker: marker.offset, default=None)


def skill_abort_settled(text: str) -> tuple[int, bool]:
    """Where the skill marker's outcome in a block is still open, for a streamed prefix `text`.

    `text` is the part of a block received so far, ending at a line end; the regex's first
    match in it held no skill marker. Returns `(offset, settled)`: `settled` when a match was
    found (its reason was empty, so the block has no skill marker, whatever follows: the
    regex takes the first match only); otherwise `offset` is the first `[ABORT]` followed by
    nothing but whitespace, which more text may still turn into a match (`len(text)` if none).
    """
    offset = text.find(Marker.ABORT)
    while offset >= 0:
        if not js_trim(text[offset + len(Marker.ABORT) :]):
            return offset, False
        if _SKILL_ABORT.match(text, offset) is not None:
            return len(text), True
        offset = text.find(Marker.ABORT, offset + 1)
    return len(text), False


def last_status_line(text: str) -> str | None:
    """Return the text after `[STATUS]` on the last line that has one, or None if empty."""
    for line in reversed(text.split("\n")):
        index = line.find(Marker.STATUS)
        if index >= 0:
            return line[index + len(Marker.STATUS) :].strip() or None
    return None


def _url_after(marker: Marker, text: str) -> str | None:
    index = text.find(marker)
    if index < 0:
        return None
    tokens = text[index + len(marker) :].split()
    return tokens[0] if tokens else None


def dashboard_url(text: str) -> str | None:
    """Return the URL written after `[DASHBOARD_URL]`, if any."""
    return _url_after(Marker.DASHBOARD_URL, text)


def notebook_url(text: str) -> str | None:
    """Return the URL written after `[NOTEBOOK_URL]`, if any."""
    return _url_after(Marker.NOTEBOOK_URL, text)


_RETAINED = (
    "API Error:",
    Marker.ERROR_MCP_MISSING,
    Marker.ERROR_RESOURCE_MISSING,
    Marker.SKILL_INSTALL_FAILED,
    Marker.WIZARD_REMARK,
)


class OutputSignals:
    """The signal-bearing lines of an agent's output, kept in bounded memory.

    Only lines that hold a retained needle are kept, and at most `max_lines` of them, so a
    run of any length costs a fixed amount of memory. This is the one stateful reader here;
    it is fed by a harness and queried when the run is classified.
    """

    def __init__(self, max_lines: int = 512) -> None:
        self._lines: deque[str] = deque(maxlen=max_lines)

    def push(self, text: str) -> None:
        """Keep every line of `text` that carries a signal."""
        for line in text.split("\n"):
            if any(needle in line for needle in _RETAINED):
                self._lines.append(line)

    def has(self, marker: Marker) -> bool:
        """Whether any kept line holds `marker`."""
        return any(marker in line for line in self._lines)

    def remark(self) -> str | None:
        """The first remark that is not an echo of `REMARK_INSTRUCTION`."""
        for line in self._lines:
            for match in _REMARK.finditer(line):
                remark = match.group(1).strip()
                if remark and remark not in REMARK_INSTRUCTION:
                    return remark
        return None

    def skill_install_failure(self) -> str | None:
        """Text after the first `[SKILL-INSTALL-FAILED]` ('' when bare), or None."""
        for line in self._lines:
            index = line.find(Marker.SKILL_INSTALL_FAILED)
            if index >= 0:
                return line[index + len(Marker.SKILL_INSTALL_FAILED) :].strip()
        return None

    def has_api_error(self) -> bool:
        """Whether the agent reported an `API Error:`."""
        return any("API Error:" in line for line in self._lines)

    def has_api_error_status(self, code: int) -> bool:
        """Whether the agent reported `API Error: <code>`."""
        return any(f"API Error: {code}" in line for line in self._lines)

    def api_error_message(self) -> str | None:
        """Every `API Error: ...` the agent reported, one per line, or None."""
        found = [m.group(0) for line in self._lines for m in _API_ERROR.finditer(line)]
        return "\n".join(found) or None
