"""A fleet's burndown at 80 columns: rows whole, each reason on a line of its own, and the
agent's words shown as they are (never as markup)."""

from __future__ import annotations

import io

from rich.console import Console

from wizard.fleet.model import Burndown, Row
from wizard.ui.fleet import burndown_view


def test_the_burndown_keeps_rows_whole_and_reasons_literal() -> None:
    rows = (
        Row("stripe-checkout-node-0", "/r/0", "proven", cost_usd=0.0507, seconds=5.2,
            branch="wizard/revenue-analytics", commit="8a09cb8e" * 5, published="created"),
        Row("todomvc-javascript-es5-1", "/r/1", "aborted", "no [bold]stripe[/] [link=x]here",
            cost_usd=0.02, seconds=4.0),
        Row("app-with-secrets", "/r/2", "proven", left_out=(".env",), published="unchanged",
            branch="wizard/revenue-analytics", commit="1234567890"),
    )  # fmt: skip
    buffer = io.StringIO()
    Console(file=buffer, width=80, no_color=True).print(
        burndown_view(Burndown("f-1", "revenue-analytics", rows, 0.0907, finished=True))
    )
    text = buffer.getvalue()
    assert "stripe-checkout-node-0     proven" in text and "created 8a09cb8" in text
    assert "todomvc-javascript-es5-1: no [bold]stripe[/] [link=x]here" in text
    assert "app-with-secrets: (left out of the commit: .env)" in text
    assert "3 repositories (2 proven, 1 aborted); finished; cost $0.0907" in text
    assert "Published to branch wizard/revenue-analytics" in text
