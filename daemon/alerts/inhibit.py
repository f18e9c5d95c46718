"""Inhibition: a firing cause mutes its symptoms (Alertmanager's inhibit_rules)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from config.matchers import Matcher, alert_labels, matches_all, parse_matcher
from daemon.alerts.model import AlertInstance


@dataclass(frozen=True)
class Inhibitor:
    """While a firing alert matches `source`, alerts matching `target` with the same `equal` labels are muted."""

    source: tuple[Matcher, ...]
    target: tuple[Matcher, ...]
    equal: tuple[str, ...]

    @classmethod
    def parse(cls, source: Sequence[str], target: Sequence[str], equal: Sequence[str]) -> Inhibitor:
        """From matcher strings, as the config file writes them."""
        return cls(tuple(map(parse_matcher, source)), tuple(map(parse_matcher, target)), tuple(equal))


def inhibited(alerts: Iterable[AlertInstance], rules: Sequence[Inhibitor]) -> set[str]:
    """Fingerprints of the alerts some firing source alert mutes (an alert never mutes itself)."""
    alerts = list(alerts)
    labelled = [(a, alert_labels(a.rule, a.labels, a.severity)) for a in alerts]
    muted: set[str] = set()
    for rule in rules:
        sources = [(a, lab) for a, lab in labelled if a.state == "firing" and matches_all(rule.source, lab)]
        if not sources:
            continue
        keys = {tuple(lab.get(n, "") for n in rule.equal) for _, lab in sources}
        source_fps = {a.fingerprint for a, _ in sources}
        for alert, lab in labelled:
            if alert.fingerprint in source_fps or not matches_all(rule.target, lab):
                continue
            if tuple(lab.get(n, "") for n in rule.equal) in keys:
                muted.add(alert.fingerprint)
    return muted
