"""Each active alert's value per evaluation over a bounded window: the data behind the charts."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from daemon.alerts.db import StateDB, from_db_time, to_db_time
from daemon.alerts.model import AlertInstance

Point = tuple[datetime, float]


class ValueHistory:
    """The alert_values table; rows older than `keep` are dropped as new ones arrive."""

    def __init__(self, db: StateDB, keep: timedelta = timedelta(hours=1)) -> None:
        self.db = db
        self.keep = keep

    def record(self, active: Sequence[AlertInstance], now: datetime) -> int:
        """Store the value of every active alert that has one; prune what fell out of the window."""
        rows = [(a.fingerprint, to_db_time(now), float(a.value)) for a in active if a.value is not None]
        with self.db.transaction() as conn:
            conn.executemany("INSERT OR REPLACE INTO alert_values (fingerprint, at, value) VALUES (?, ?, ?)", rows)
            conn.execute("DELETE FROM alert_values WHERE at < ?", (to_db_time(now - self.keep),))
        return len(rows)

    def series(self, fingerprint: str, since: datetime | None = None) -> list[Point]:
        """(time, value) points of one alert, oldest first."""
        sql, params = "SELECT at, value FROM alert_values WHERE fingerprint = ?", [fingerprint]
        if since is not None:
            sql += " AND at >= ?"
            params.append(to_db_time(since))
        return [(from_db_time(r["at"]), r["value"]) for r in self.db.query(sql + " ORDER BY at", params)]

    def all_series(self, fingerprints: Sequence[str]) -> dict[str, list[Point]]:
        """Series of several alerts at once (one query), keyed by fingerprint."""
        if not fingerprints:
            return {}
        marks = ",".join("?" * len(fingerprints))
        rows = self.db.query(
            f"SELECT fingerprint, at, value FROM alert_values WHERE fingerprint IN ({marks}) ORDER BY at",
            list(fingerprints),
        )
        out: dict[str, list[Point]] = {f: [] for f in fingerprints}
        for r in rows:
            out[r["fingerprint"]].append((from_db_time(r["at"]), r["value"]))
        return out
