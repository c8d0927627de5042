"""The marker parsers: every example of checklist §10.1, our own edge cases, and properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wizard.signals import (
    GATEWAY_FALLBACK_REASON,
    REMARK_INSTRUCTION,
    Marker,
    OutputSignals,
    StopMarker,
    dashboard_url,
    first_stop_marker,
    gateway_refusal_reason,
    js_trim,
    last_status_line,
    notebook_url,
    skill_abort_reason,
)

SKILL_CASES = [
    # §10.1 item 2
    ("[ABORT] Could not find a Stripe integration", "Could not find a Stripe integration"),
    ("x [ABORT] mid line\nmore", "mid line"),
    ("[ABORT]reason", "reason"),
    ("[abort] x", None),
    ("[ABORT] first\n[ABORT] second", "first"),
    # item 3: a bare marker is not an abort
    ("[ABORT]", None),
    ("[ABORT]\n", None),
    # item 4: whitespace after the marker crosses line breaks
    ("[ABORT]\n\nnext line", "next line"),
    ("[ABORT] \n[STATUS] Doing", "[STATUS] Doing"),
    # item 5, decided: whitespace only is not an abort
    ("[ABORT]   ", None),
    ("[ABORT] \t \n  ", None),
    # item 6: code fences are not special
    ("```\n[ABORT] in code\n```", "in code"),
    # item 7: markdown is kept
    ("**[ABORT] no mcp server found**", "no mcp server found**"),
    # item 8: trailing punctuation is kept
    ("I will emit [ABORT] requirements-incomplete.", "requirements-incomplete."),
    ("[ABORT] reason.  \n", "reason."),
    # item 9: JavaScript line terminators
    ("[ABORT] a\r\nb", None),
    ("[ABORT] a\rb\nc", None),
    ("[ABORT] x\u2028y", None),
    ("[ABORT] x\u2029y", None),
    ("[ABORT]\r\nreason", "reason"),
    ("[ABORT]\u00a0reason", "reason"),
    ("[ABORT]\ufeffreason\ufeff", "reason"),
    # our own: Python-only whitespace is not JavaScript whitespace
    ("[ABORT]\x1creason", "\x1creason"),
    ("[ABORT] reason\x85", "reason\x85"),
    ("[ABORT] tab\treason\t", "tab\treason"),
    (
        "prefix text\n[ABORT] the api is not enabled for this project\nsuffix",
        "the api is not enabled for this project",
    ),
    ("[ABORT] a\r\nb\n[ABORT] later", "later"),
    ("[ ABORT] x", None),
    ("[ABORT", None),
    ("", None),
    ("[ABORT][ABORT] x", "[ABORT] x"),
]


@pytest.mark.parametrize(("text", "expected"), SKILL_CASES)
def test_skill_abort_reason(text: str, expected: str | None) -> None:
    assert skill_abort_reason(text) == expected


GATEWAY_CASES = [
    ("[posthog:abort] Policy violation", "Policy violation"),
    ("[posthog:abort]", GATEWAY_FALLBACK_REASON),
    ("[posthog:abort]   \nnext", GATEWAY_FALLBACK_REASON),
    ("before [posthog:abort] why\nafter", "why"),
    ("[posthog:abort] a\r\n", "a"),
    ("[POSTHOG:ABORT] x", None),
    ("no marker", None),
    ("[posthog:abort] one [posthog:abort] two", "one [posthog:abort] two"),
]


@pytest.mark.parametrize(("text", "expected"), GATEWAY_CASES)
def test_gateway_refusal_reason(text: str, expected: str | None) -> None:
    assert gateway_refusal_reason(text) == expected


def test_gateway_marker_is_configurable() -> None:
    assert gateway_refusal_reason("[acme:refuse] nope", marker="[acme:refuse]") == "nope"
    assert gateway_refusal_reason("[posthog:abort] x", marker="[acme:refuse]") is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "[ABORT] skill first [posthog:abort] g",
            StopMarker("skill first [posthog:abort] g", "skill", 0),
        ),
        ("[posthog:abort] g\n[ABORT] s", StopMarker("g", "gateway_policy", 0)),
        ("ab [ABORT] s", StopMarker("s", "skill", 3)),
        ("[ABORT]\n[posthog:abort] g", StopMarker("[posthog:abort] g", "skill", 0)),
        ("[ABORT]   ", None),
        ("[ABORT] [posthog:abort]", StopMarker("[posthog:abort]", "skill", 0)),
        (
            "bare [ABORT] then [posthog:abort] why",
            StopMarker("then [posthog:abort] why", "skill", 5),
        ),
        ("hello", None),
    ],
)
def test_first_stop_marker(text: str, expected: StopMarker | None) -> None:
    assert first_stop_marker(text) == expected


def test_bare_abort_does_not_hide_a_later_gateway_marker() -> None:
    marker = first_stop_marker("[ABORT]   ", gateway_marker="[g]")
    assert marker is None
    found = first_stop_marker("[ABORT]\t[g] denied", gateway_marker="[g]")
    assert found == StopMarker("[g] denied", "skill", 0)
    found = first_stop_marker("x[g] denied [ABORT]", gateway_marker="[g]")
    assert found == StopMarker("denied [ABORT]", "gateway_policy", 1)


_MARKERISH = st.lists(
    st.sampled_from(
        [
            "[ABORT]",
            "[posthog:abort]",
            " ",
            "\n",
            "\r",
            "\u2028",
            "\u00a0",
            "\ufeff",
            "x",
            "é",
            ".",
            "*",
        ]
    ),
    max_size=30,
).map("".join)


@given(st.one_of(st.text(), _MARKERISH))
def test_parsers_never_raise(text: str) -> None:
    skill_abort_reason(text)
    gateway_refusal_reason(text)
    first_stop_marker(text)
    last_status_line(text)
    OutputSignals().push(text)


@given(st.one_of(st.text(), _MARKERISH))
def test_first_stop_marker_agrees_with_the_parsers(text: str) -> None:
    marker = first_stop_marker(text)
    skill = skill_abort_reason(text)
    gateway = gateway_refusal_reason(text)
    if marker is None:
        assert skill is None and gateway is None
    elif marker.source == "skill":
        assert marker.reason == skill
        assert gateway is None or text.find("[posthog:abort]") > marker.offset
    else:
        assert marker.reason == gateway
        assert marker.offset == text.find("[posthog:abort]")
    if marker is not None:
        assert marker.reason == js_trim(marker.reason) and marker.reason


@given(st.text())
def test_reasons_are_trimmed_single_lines(text: str) -> None:
    reason = skill_abort_reason(text)
    if reason is not None:
        assert "\n" not in reason and "\r" not in reason
        assert reason == js_trim(reason) != ""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[STATUS] Installing the SDK", "Installing the SDK"),
        ("working [STATUS] mid block", "mid block"),
        ("[STATUS] one\n[STATUS] two", "two"),
        ("nothing here", None),
        ("[STATUS]    ", None),
    ],
)
def test_last_status_line(text: str, expected: str | None) -> None:
    assert last_status_line(text) == expected


def test_outro_urls() -> None:
    text = "done\n[DASHBOARD_URL] https://example.test/d/1 more\n[NOTEBOOK_URL]   https://n/2"
    assert dashboard_url(text) == "https://example.test/d/1"
    assert notebook_url(text) == "https://n/2"
    assert dashboard_url("[DASHBOARD_URL]   ") is None


def test_output_signals_keep_only_signal_lines() -> None:
    signals = OutputSignals(max_lines=3)
    signals.push("plain line\nAPI Error: 500 boom\nanother plain one")
    for _ in range(10):
        signals.push("[ERROR-MCP-MISSING] gone")
    assert signals.has(Marker.ERROR_MCP_MISSING)
    assert not signals.has_api_error()  # pushed out by the bound
    assert len(signals._lines) == 3


def test_output_signals_api_errors() -> None:
    signals = OutputSignals()
    signals.push("API Error: 429 rate limited\nok\nAPI Error: 500 server")
    assert signals.has_api_error()
    assert signals.has_api_error_status(429)
    assert not signals.has_api_error_status(401)
    assert signals.api_error_message() == "API Error: 429 rate limited\nAPI Error: 500 server"
    assert OutputSignals().api_error_message() is None


def test_remark_ignores_echoes_of_the_instruction() -> None:
    signals = OutputSignals()
    signals.push(REMARK_INSTRUCTION)
    signals.push("[WIZARD-REMARK] and no other lines")
    assert signals.remark() is None
    signals.push("[WIZARD-REMARK] The skill should say which Stripe SDK version it expects.")
    assert signals.remark() == "The skill should say which Stripe SDK version it expects."


def test_skill_install_failure() -> None:
    signals = OutputSignals()
    assert signals.skill_install_failure() is None
    signals.push("[SKILL-INSTALL-FAILED]")
    assert signals.skill_install_failure() == ""
    other = OutputSignals()
    other.push("note [SKILL-INSTALL-FAILED] menu down ")
    assert other.skill_install_failure() == "menu down"
