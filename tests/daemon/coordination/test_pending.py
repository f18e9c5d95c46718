"""Pending from content, and held rows against the log: pure functions any daemon computes alike."""

from __future__ import annotations

from datetime import UTC, datetime

from daemon.coordination.model import GroupRef, LogGroup, Told
from daemon.coordination.pending import PendingChange, already_told, pending_changes, told_by

AT = datetime(2026, 11, 27, 3, 0, tzinfo=UTC)


def group(firing: dict[str, str | None], resolved: tuple[str, ...] = (), closed: bool = False) -> LogGroup:
    """A log record that told `firing` and the resolves of `resolved`."""
    return LogGroup(GroupRef("root", "slack", "{}"), {}, dict(firing), {fp: AT for fp in resolved}, None, AT,
                    "first", 1, {}, closed)


def test_nothing_told_yet_everything_firing_is_pending_and_a_closed_group_starts_over() -> None:
    assert pending_changes(None, {"b": "critical", "a": None}) == [
        PendingChange("firing", "a", None), PendingChange("firing", "b", "critical")]
    assert pending_changes(group({"a": None}, closed=True), {"a": None}) == [PendingChange("firing", "a", None)]


def test_a_notification_tells_the_firing_alerts_and_the_resolves_and_keeps_silenced_ones_told() -> None:
    told = group({"a": "warning", "m": "critical"})
    changes = pending_changes(told, {"b": "warning"}, muted={"m"})
    assert changes == [PendingChange("firing", "b", "warning"), PendingChange("resolved", "a", "warning")]
    assert told_by({"b": "warning"}, changes, muted={"m"}, group=told) == Told(
        {"m": "critical", "b": "warning"}, ("a",))


def test_held_rows_the_log_records_are_dropped_and_the_others_sent() -> None:
    log = group({"a": "warning"}, resolved=("r",))
    assert already_told(log, Told({"a": "warning"}))
    assert already_told(log, Told({"r": "critical"})), "fired and was told resolved since: old news"
    assert already_told(log, Told({}, ("r",)))
    assert not already_told(log, Told({"a": "critical"})), "the severity told differs"
    assert not already_told(log, Told({"b": "warning"}))
    assert not already_told(log, Told({}, ("a",))), "the receiver still believes it fires"
    assert not already_told(None, Told({"a": "warning"}))
