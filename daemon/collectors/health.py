"""Per-target figures on collector_health rows: what else the same target answered in the same cycle,
and which broker the target is.

One failed call to a broker that answers everything else is degraded collection, not an
unreachable broker; a rule can only tell the two apart if each row says how its target fared as
a whole, so every collector passes its cycle's rows through `with_target_figures`.

A row names its target by address; the broker-side rules name a broker by its name and id. The
remoting collector passes the cluster info's brokers (address -> name, id), so a row of a call to a
broker also carries `broker` and `broker_id`, and an alert about that address can be linked to the
broker's own alerts (rules/builtin/collector.yaml). Every other row has them null.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

TARGET_OK_CALLS = "target_ok_calls"
TARGET_FAILING = "target_failing"
BROKER = "broker"
BROKER_ID = "broker_id"


def with_target_figures(
    rows: Iterable[dict[str, Any]], brokers: Mapping[str, tuple[str, int]] | None = None
) -> list[dict[str, Any]]:
    """The rows of one cycle, each given its target's count of calls that succeeded and the names of those
    that failed, and the broker (name, id) `brokers` gives for its target address (null for any other target)."""
    rows = list(rows)
    brokers = brokers or {}
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
        row[BROKER], row[BROKER_ID] = brokers.get(target, (None, None))
    return rows
