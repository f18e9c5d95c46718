"""Silences: matchers that mute alerts for a time window, persisted in the state file."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from config.matchers import Matcher, matches_all, parse_matcher
from daemon.alerts.db import StateDB, from_db_time, to_db_time


@dataclass(frozen=True)
class Silence:
    """Mutes every alert its matchers match, from starts_at until ends_at."""

    id: str
    matchers: tuple[Matcher, ...]
    starts_at: datetime
    ends_at: datetime
    created_by: str
    comment: str

    def active(self, now: datetime) -> bool:
        """True while the silence is in force."""
        return self.starts_at <= now < self.ends_at

    def mutes(self, labels: Mapping[str, str], now: datetime) -> bool:
        """True when this silence is in force and matches `labels`."""
        return self.active(now) and matches_all(self.matchers, labels)

    def state(self, now: datetime) -> str:
        """pending, active or expired."""
        if now < self.starts_at:
            return "pending"
        return "active" if now < self.ends_at else "expired"

    def to_json(self, now: datetime) -> dict[str, Any]:
        """A plain dict for the CLI and the HTTP API."""
        return {
            "id": self.id,
            "matchers": [str(m) for m in self.matchers],
            "starts_at": self.starts_at.isoformat(),
            "ends_at": self.ends_at.isoformat(),
            "created_by": self.created_by,
            "comment": self.comment,
            "state": self.state(now),
        }


class SilenceStore:
    """The silences table; safe to use from the CLI while the daemon runs (WAL, busy timeout)."""

    def __init__(self, db: StateDB) -> None:
        self.db = db
        self.changed: Callable[[], None] = lambda: None  # HA: the mirror shares the change at once

    def add(
        self, matchers: Sequence[str], starts_at: datetime, ends_at: datetime, created_by: str, comment: str, now: datetime
    ) -> Silence:
        """Create a silence; ValueError for a bad matcher, no matcher, or an empty time window."""
        if not matchers:
            raise ValueError("a silence needs at least one matcher, e.g. group=\"orders\"")
        parsed = tuple(parse_matcher(m) for m in matchers)
        if ends_at <= starts_at:
            raise ValueError(f"the silence ends ({ends_at.isoformat()}) before it starts ({starts_at.isoformat()})")
        if not created_by.strip() or not comment.strip():
            raise ValueError("say who silences and why (author and comment): the next on-call reads them")
        # Random, not counted: daemons sharing silences through a coordinator each make their own.
        silence = Silence(uuid.uuid4().hex[:12], parsed, starts_at, ends_at, created_by, comment)
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO silences (id, matchers, starts_at, ends_at, created_by, comment, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (silence.id, json.dumps([str(m) for m in parsed]), to_db_time(starts_at), to_db_time(ends_at),
                 created_by, comment, to_db_time(now), to_db_time(now)),
            )
        self.changed()
        return silence

    def expire(self, silence_id: str, now: datetime) -> Silence:
        """End a silence now; KeyError if there is no such silence."""
        with self.db.transaction() as conn:
            updated = conn.execute(
                "UPDATE silences SET ends_at = ?, updated_at = ?, mirrored = 0 WHERE id = ? AND ends_at > ?",
                (to_db_time(now), to_db_time(now), silence_id, to_db_time(now)),
            ).rowcount
        if updated:
            self.changed()
        found = [s for s in self.all() if s.id == silence_id]
        if not found:
            raise KeyError(f"no silence with id {silence_id!r}")
        if not updated and found[0].ends_at > now:
            raise KeyError(f"silence {silence_id!r} could not be expired")
        return found[0]

    def all(self) -> list[Silence]:
        """Every silence, newest first."""
        rows = self.db.query("SELECT * FROM silences ORDER BY created_at DESC")
        return [
            Silence(
                r["id"], tuple(parse_matcher(m) for m in json.loads(r["matchers"])),
                from_db_time(r["starts_at"]), from_db_time(r["ends_at"]), r["created_by"], r["comment"],
            )
            for r in rows
        ]

    def active(self, now: datetime) -> list[Silence]:
        """Silences in force at `now`."""
        return [s for s in self.all() if s.active(now)]
