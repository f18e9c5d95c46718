"""What an evaluation hands to the alert tracker: plain values, no Spark types."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Literal

Severity = Literal["warning", "critical"]
SEVERITY_ORDER: dict[str, int] = {"warning": 1, "critical": 2}


def fingerprint(rule: str, labels: dict[str, str]) -> str:
    """Stable id of one alert instance: the rule name plus its label set."""
    text = rule + "\x00" + "\x00".join(f"{k}\x01{v}" for k, v in sorted(labels.items()))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Finding:
    """One rule matching one label set at one evaluation.

    `labels` holds the rule's `by` columns plus its static labels (never severity: severity is an
    attribute of the instance). A finding with `no_data=True` says the series went stale: the
    tracker keeps the instance as it is instead of resolving it.
    """

    rule: str
    labels: dict[str, str]
    severity: Severity | None
    value: float | None
    threshold: float | None
    annotations: dict[str, str] = field(default_factory=dict)
    no_data: bool = False

    @property
    def fingerprint(self) -> str:
        """Id of the alert instance this finding belongs to."""
        return fingerprint(self.rule, self.labels)


@dataclass(frozen=True)
class RuleTiming:
    """What the tracker needs to know of a rule: how long to hold before firing and resolving."""

    name: str
    for_: timedelta = timedelta(0)
    keep_firing_for: timedelta = timedelta(0)
