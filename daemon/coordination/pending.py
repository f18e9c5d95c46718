"""What waits to be told, from content: the holder's current alerts of a group minus what the shared log says
its receiver was told. Any daemon computes the same from the same log, whatever it saw of the events."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Literal

from daemon.coordination.model import LogGroup, Told


@dataclass(frozen=True)
class PendingChange:
    """One difference between what fires now and what the receiver was told."""

    kind: Literal["firing", "resolved", "severity_changed"]
    fingerprint: str
    severity: str | None
    previous_severity: str | None = None


def pending_changes(group: LogGroup | None, firing: Mapping[str, str | None],
                    muted: Collection[str] = ()) -> list[PendingChange]:
    """Changes not yet told: new firing alerts, severity changes, and resolves of alerts told firing.

    `firing` maps the group's unmuted firing alerts to their severity; an alert told firing that is
    `muted` now is neither resolved nor news (a silence hides it, it did not end)."""
    told = group.told_firing if group is not None and not group.closed else {}
    changes = []
    for fingerprint, severity in sorted(firing.items()):
        if fingerprint not in told:
            changes.append(PendingChange("firing", fingerprint, severity))
        elif told[fingerprint] != severity:
            changes.append(PendingChange("severity_changed", fingerprint, severity, told[fingerprint]))
    for fingerprint in sorted(told.keys() - firing.keys() - set(muted)):
        changes.append(PendingChange("resolved", fingerprint, told[fingerprint]))
    return changes


def told_by(firing: Mapping[str, str | None], changes: Collection[PendingChange],
            muted: Collection[str] = (), group: LogGroup | None = None) -> Told:
    """What a notification sent now tells: every firing alert (muted ones still told keep their line
    in the log, unannounced) and the resolves among `changes`."""
    told = group.told_firing if group is not None and not group.closed else {}
    kept = {fp: told[fp] for fp in muted if fp in told and fp not in firing}
    return Told({**kept, **firing}, tuple(sorted(c.fingerprint for c in changes if c.kind == "resolved")))


def already_told(group: LogGroup | None, told: Told) -> bool:
    """Whether the shared log already records what a notification held locally would tell: every alert it
    tells firing was told with that severity (or has been told resolved since), and none it tells
    resolved is still told firing. Such a held row is dropped; any other is sent by the next holder."""
    firing = group.told_firing if group is not None and not group.closed else {}
    resolved = group.told_resolved if group is not None else {}
    return (all(firing.get(fp, "\0") == severity or fp in resolved for fp, severity in told.firing.items())
            and not any(fp in firing for fp in told.resolved))
