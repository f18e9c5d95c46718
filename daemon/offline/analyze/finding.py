"""A finding of `analyze`: one sentence an operator acts on, with the evidence behind it."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Finding:
    """One sentence an operator acts on, about one group (or the broker), with its evidence."""

    subject: str
    what: str
    evidence: list[str] = field(default_factory=list)
