"""Per-target figures on collector_health rows: what else the same target answered in the same cycle.

One failed call to a broker that answers everything else is degraded collection, not an
unreachable broker; a rule can only tell the two apart if each row says how its target fared as
a whole, so every collector passes its cycle's rows through `with_target_figures`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

TARGET_OK_CALLS = "target_ok_calls"
TARGET_FAILING = "target_failing"


def with_target_figures(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of one cycle, each given its target's count of calls that succeeded and the names of those that failed."""
    rows = list(rows)
    ok: dict[str, int] = {}
    failing: dict[str, set[str]] = {}
    for row in rows:
        target = row["target"]
        ok.setdefault(target, 0)
        if row["ok"]:
            ok[target] += 1
        else:
            failing.setdefault(target, set()).add(row["call"])
    for row in rows:
        target = row["target"]
        row[TARGET_OK_CALLS] = ok[target]
        row[TARGET_FAILING] = ", ".join(sorted(failing[target])) if target in failing else None
    return rows
