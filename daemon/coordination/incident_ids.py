"""Incident ids every daemon agrees on (the shared incident table), and what to do while it is away.

Opening an incident asks the coordinator for the incident open at the same locus (adopting its id) and
opens one under the proposed id otherwise. When the coordinator does not answer, the daemon keeps its own
id for now and claims it as soon as the coordinator answers again (`reconcile`): kept when nobody else
opened one meanwhile, renamed to theirs when someone did — before anything about it was sent, since
nobody sends while the coordinator is away.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from daemon.coordination.model import Coordinator, CoordinatorUnavailable

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Unclaimed:
    locus: dict[str, str]
    opened_at: datetime


class IncidentIds:
    """The shared incident table as an incident book uses it: open, resolve, reconcile."""

    def __init__(self, coordinator: Coordinator, holder: str) -> None:
        self.coordinator = coordinator
        self.holder = holder
        self.unclaimed: dict[str, _Unclaimed] = {}  # local id -> where and when it opened
        self.unresolved: dict[str, datetime] = {}  # shared id -> when it resolved here

    async def open(self, locus: Mapping[str, str], proposed_id: str, at: datetime) -> str:
        """The id of the incident at `locus`: the one open on any daemon, else `proposed_id` (claimed)."""
        try:
            claim = await self.coordinator.claim_incident(locus, proposed_id, at, opened_by=self.holder)
        except CoordinatorUnavailable as exc:
            log.warning("incident %s at %s opened under its local id: %s (claimed when the coordinator answers)",
                        proposed_id, dict(locus), exc)
            self.unclaimed[proposed_id] = _Unclaimed(dict(locus), at)
            return proposed_id
        if claim.adopted:
            log.info("incident at %s: adopting %s, opened at %s by another daemon", dict(locus), claim.id,
                     claim.opened_at.isoformat())
        return claim.id

    async def resolve(self, incident_id: str, at: datetime) -> None:
        """Every alert of the incident resolved here: mark it resolved for everyone (or later)."""
        if self.unclaimed.pop(incident_id, None) is not None:
            return  # never claimed: nobody else knows it, and it must not close an incident someone else opened
        try:
            await self.coordinator.resolve_incident(incident_id, at)
        except CoordinatorUnavailable:
            self.unresolved[incident_id] = at

    async def reconcile(self) -> dict[str, str]:
        """Claim what opened and resolve what ended while the coordinator was away; {local id: shared id}
        for each incident that another daemon had opened meanwhile (the caller renames it)."""
        renamed: dict[str, str] = {}
        for local_id, unclaimed in list(self.unclaimed.items()):
            try:
                claim = await self.coordinator.claim_incident(unclaimed.locus, local_id, unclaimed.opened_at,
                                                              opened_by=self.holder)
            except CoordinatorUnavailable:
                return renamed
            del self.unclaimed[local_id]
            if claim.id != local_id:
                renamed[local_id] = claim.id
        for incident_id, at in list(self.unresolved.items()):
            try:
                await self.coordinator.resolve_incident(incident_id, at)
            except CoordinatorUnavailable:
                return renamed
            del self.unresolved[incident_id]
        return renamed
