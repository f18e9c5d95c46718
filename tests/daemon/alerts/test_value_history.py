"""The value history keeps each active alert's values for the window and forgets older ones."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from daemon.alerts.db import StateDB
from daemon.alerts.model import AlertInstance
from daemon.alerts.value_history import ValueHistory

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def alert(fp: str, value: float | None) -> AlertInstance:
    return AlertInstance(fp, "Lag", {"group": fp}, "warning", value, 10.0, {}, "firing", T0)


def test_values_are_kept_for_the_window_per_alert(tmp_path):
    db = StateDB(tmp_path / "state.db")
    history = ValueHistory(db, keep=timedelta(minutes=10))
    for minute in range(15):
        history.record([alert("a", float(minute)), alert("b", None)], T0 + timedelta(minutes=minute))
    series = history.series("a")
    assert [v for _, v in series] == [float(m) for m in range(4, 15)]  # 10 minutes back from the last
    assert history.series("b") == []  # no value, no point
    assert history.all_series(["a", "b"])["a"] == series
    db.close()
