"""Times as the status and incident pages print them: short and relative to the page's own time."""

from __future__ import annotations

from datetime import datetime


def ago(now: datetime, then: datetime | None) -> str:
    """How long before `now` `then` was ("3m ago"; "in 2m" when ahead, "never" when None)."""
    if then is None:
        return "never"
    seconds = int((now - then).total_seconds())
    if seconds < 0:
        return f"in {span(-seconds)}"
    return f"{span(seconds)} ago"


def span(seconds: int) -> str:
    """A duration as the pages print it: seconds under 2m, minutes under 2h, then hours and minutes."""
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"
