"""The status page's sections on rocketwatch's own work: its last cycles, and how each cluster's
collector calls fared in its last collection."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from html import escape
from typing import Any

from daemon.http.relative_time import ago
from daemon.http.view import CycleView


def cycles_section(cycles: Sequence[CycleView], last_cycle_at: datetime | None, now: datetime) -> str:
    """The last collect and evaluate cycles: when, how long, rows, failed calls."""
    ready = f"last completed evaluation {ago(now, last_cycle_at)}"
    if not cycles:
        return f'<h2 id="cycles">Cycles</h2><p class="muted">{ready}; no cycle has run yet.</p>'
    rows = "".join(
        f"<tr><td>{escape(c.kind)}</td><td>{escape(c.target)}</td>"
        f'<td title="{escape(c.at.isoformat())}">{ago(now, c.at)}</td><td>{c.seconds:.2f}s</td>'
        f"<td>{c.rows}</td><td class=\"{'bad' if c.failed_calls else 'ok'}\">{c.failed_calls}</td></tr>"
        for c in sorted(cycles, key=lambda c: c.at, reverse=True)  # by start; evaluations finish late
    )
    return (
        f'<h2 id="cycles">Cycles</h2><p>{ready}</p><table><tr><th>cycle</th><th>target</th><th>when</th>'
        f"<th>duration</th><th>rows / findings</th><th>failed calls</th></tr>{rows}</table>"
    )


def _health_by_target(rows: Iterable[Mapping[str, Any]]) -> list[tuple[str, int, int, float, str]]:
    targets: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        targets.setdefault(str(row["target"]), []).append(row)
    result = []
    for target, calls in sorted(targets.items()):
        failed = [c for c in calls if not c["ok"]]
        errors = "; ".join(sorted({f"{c['call']}: {c['error']}" for c in failed}))
        slowest = max((float(c.get("latency_ms") or 0.0) for c in calls), default=0.0)
        result.append((target, len(calls), len(failed), slowest, errors))
    return result


def health_section(health: Mapping[str, list[dict[str, Any]]]) -> str:
    """Collector health per cluster and target, from each cluster's last collection."""
    if not health:
        return '<h2 id="health">Collector health</h2><p class="muted">No collection has run yet.</p>'
    rows = []
    for cluster, health_rows in sorted(health.items()):
        for target, calls, failed, slowest, errors in _health_by_target(health_rows):
            status = f'<span class="bad">{failed} failed</span>' if failed else '<span class="ok">ok</span>'
            rows.append(
                f"<tr><td>{escape(cluster)}</td><td>{escape(target)}</td><td>{calls}</td><td>{status}</td>"
                f"<td>{slowest:.0f} ms</td><td>{escape(errors)}</td></tr>"
            )
    return (
        '<h2 id="health">Collector health</h2><table><tr><th>cluster</th><th>target</th><th>calls</th>'
        f"<th>status</th><th>slowest</th><th>errors</th></tr>{''.join(rows)}</table>"
    )
