"""A fleet's burndown on the terminal: one row per repository, totals, and what it cost."""

from __future__ import annotations

from rich import box
from rich.table import Table

from wizard.fleet.model import Burndown, Row

_STYLES = {"proven": "green", "set up": "green", "aborted": "yellow", "unverified": "yellow",
           "failed": "red", "running": "cyan", "skipped": "dim", "cancelled": "dim"}  # fmt: skip


def burndown_table(burndown: Burndown, ui: str | None = None) -> Table:
    """The fleet's rows, with its totals and cost as the caption."""
    table = Table(title=f"Fleet {burndown.fleet_id}: {burndown.program}", title_justify="left",
                  box=box.SIMPLE_HEAD, pad_edge=False)  # fmt: skip
    for column in ("repository", "status", "cost", "time", "published"):
        table.add_column(column, no_wrap=True)
    table.add_column("reason", ratio=1, overflow="fold")
    for row in burndown.rows:
        style = _STYLES.get(row.status, "")
        table.add_row(row.repo, f"[{style}]{row.status}[/]" if style else row.status,
                      _cost(row.cost_usd), f"{row.seconds:.0f} s" if row.seconds else "",
                      _branch(row), _reason(row))  # fmt: skip
    branches = {row.branch for row in burndown.rows if row.branch}
    table.caption = summary(burndown) + "".join(f"\nPublished to branch {b}" for b in branches)
    table.caption += f"\nTemporal UI: {ui}" if ui else ""
    table.caption_justify = "left"
    return table


def summary(burndown: Burndown) -> str:
    """One line: how many repositories ended each way, and the cost so far."""
    counts = ", ".join(f"{n} {status}" for status, n in burndown.counts().items())
    state = "cancelled" if burndown.cancelled else "finished" if burndown.finished else "running"
    spent = "; the fleet's budget is spent" if burndown.budget_spent else ""
    if burndown.pace_seconds:
        spent += f"; one start every {burndown.pace_seconds:g} s at most"
    cost = _cost(burndown.cost_usd) or "$0"
    return f"{len(burndown.rows)} repositories ({counts}); {state}; cost {cost}{spent}"


def progress_line(row: Row) -> str:
    """What one repository's change says as it happens."""
    tail = f": {row.reason}" if row.reason else ""
    return f"{row.repo}: {row.status}{tail}"


def _cost(cost: float | None) -> str:
    return f"${cost:.4f}" if cost else ""


def _branch(row: Row) -> str:
    if not row.published:
        return ""
    return f"{row.published} {row.commit[:7]}" if row.commit else row.published


def _reason(row: Row) -> str:
    left_out = f" (left out of the commit: {', '.join(row.left_out)})" if row.left_out else ""
    return (row.reason[:160] + left_out).strip()
