"""What a symptom scenario must fire, and the check that it fired that and nothing else critical."""

from __future__ import annotations

from dataclasses import dataclass, field

from daemon.simulator.scenarios_symptoms import GROUP_B
from rules.findings import Finding


@dataclass(frozen=True)
class Case:
    """What a scenario must fire (rule, labels it must carry, severity) and what else may fire."""

    expect: list[tuple[str, dict[str, str], str]]
    may_also: frozenset[str] = frozenset()
    options: dict[str, object] = field(default_factory=dict)
    fault: str | None = None  # broker whose connections are refused before sampling
    names_group_b: bool = False  # only when the cause is shared (broker side) may the healthy peer be named


def show(findings: list[Finding]) -> str:
    """Findings one per line, for assertion messages."""
    return "\n".join(f"{f.rule} {f.severity} {f.value} {f.labels}" for f in findings) or "(nothing)"


def assert_fires_only_its_rule(name: str, case: Case, firing: list[Finding]) -> None:
    """The expected rules fire with their cause labels and severity; nothing else critical, nothing unlisted."""
    for rule, labels, severity in case.expect:
        hits = [f for f in firing if f.rule == rule and labels.items() <= f.labels.items()]
        assert hits, f"{name}: expected {rule} {labels}; fired:\n{show(firing)}"
        assert any(f.severity == severity for f in hits), f"{name}: {rule} not {severity}:\n{show(hits)}"
    expected = {rule for rule, _, _ in case.expect}
    stray = [f for f in firing if f.rule not in expected and (f.severity == "critical" or f.rule not in case.may_also)]
    assert not stray, f"{name}: unexpected findings:\n{show(stray)}"
    if not case.names_group_b:
        assert not [f for f in firing if f.labels.get("group") == GROUP_B], show(firing)
