"""A fleet's burndown on the terminal: one row per repository, totals, and what it cost."""

from __future__ import annotations

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from wizard.fleet.model import Burndown, Row

_STYLES = {"proven": "green", "set up": "green", "aborted": "yellow", "unverified": "yellow",
           "not applicable": "dim", "failed": "red", "running": "cyan", "skipped": "dim",
           "cancelled": "dim"}  # fmt: skip


def burndown_view(burndown: Burndown) -> RenderableType:
    """The fleet's rows, then each repository's reason, its totals and cost. Every text that
    came from a run (a reason is the agent's own words) is shown as text, never as markup."""
    table = Table(title=Text(f"Fleet {burndown.fleet_id}: {burndown.program}"),
                  title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)  # fmt: skip
    for column in ("repository", "status", "cost", "time", "published"):
        table.add_column(column, no_wrap=True)
    for row in burndown.rows:
        table.add_row(Text(row.repo), Text(row.status, style=_STYLES.get(row.status, "")),
                      _cost(row.cost_usd), f"{row.seconds:.0f} s" if row.seconds else "",
                      _branch(row))  # fmt: skip
    lines = [f"{row.repo}: {reason}" for row in burndown.rows if (reason := _reason(row))]
    lines += ["", summary(burndown)]
    lines += [
        f"Published to branch {b}" for b in sorted({r.branch for r in burndown.rows if r.branch})
    ]
    return Group(table, Text("\n".join(lines)))


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
    return (row.reason[:300] + left_out).strip()
