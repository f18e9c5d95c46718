"""Operators tune loaded rules (usually the built-in pack) from the daemon config, without forking them.

    rule_overrides:
      ProcessQueueSpanTooLong:
        for: 10s                       # replaces
        labels: {team: payments}       # merged into the rule's labels
        above: {critical: 5000}        # replaces only the levels given
        exclude: {group: "test-.*"}    # regex, full match; added to the rule's own excludes
      SomeNoisyRule: {disabled: true}
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from rules.durations import Duration
from rules.kinds.base import RuleBase
from rules.kinds.threshold import Levels
from rules.models import RuleSet


class RuleOverride(BaseModel):
    """Changes to one rule; unset fields leave the rule as it is."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    disabled: bool = False
    for_: Duration | None = Field(None, alias="for")
    keep_firing_for: Duration | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    above: Levels | None = None
    below: Levels | None = None
    exclude: dict[str, str] = Field(default_factory=dict)


@dataclass(frozen=True)
class OverrideError:
    """One problem with an override: the rule it names, the field under that rule's entry, and a sentence."""

    rule: str
    field: tuple[str | int, ...]  # () for the rule's entry itself (an unknown rule)
    message: str

    def __str__(self) -> str:
        if not self.field:
            return self.message
        return f"{self.rule}: {'.'.join(map(str, self.field))}: {self.message}"


def _merge_levels(current: Levels | None, change: Levels) -> Levels:
    # Only the levels the operator wrote are replaced: `above: {critical: 5000}` keeps the warning.
    if current is None:
        return change
    values = {level: getattr(change, level) if level in change.model_fields_set else getattr(current, level)
              for level in ("warning", "critical")}
    return Levels(**values)


def _override_one(rule: RuleBase, override: RuleOverride) -> tuple[RuleBase, list[OverrideError]]:
    update: dict[str, Any] = {}
    errors: list[OverrideError] = []
    if override.for_ is not None:
        update["for_"] = override.for_
    if override.keep_firing_for is not None:
        update["keep_firing_for"] = override.keep_firing_for
    if override.labels:
        update["labels"] = {**rule.labels, **override.labels}
    if override.exclude:
        update["exclude"] = {**rule.exclude, **override.exclude}
    for side in ("above", "below"):
        change: Levels | None = getattr(override, side)
        if change is None:
            continue
        if side not in type(rule).model_fields:
            errors.append(OverrideError(rule.alert, (side,), f"rule kind has no `{side}` levels"))
            continue
        update[side] = _merge_levels(getattr(rule, side), change)
    changed = rule.model_copy(update=update)
    # The new levels, labels and excludes must make sense for the rule's table, like in a rule file.
    errors.extend(OverrideError(rule.alert, loc, msg) for loc, msg in changed.check())
    return changed, errors


def apply_overrides(ruleset: RuleSet, overrides: dict[str, RuleOverride]) -> tuple[RuleSet, list[str]]:
    """The rule set with `overrides` applied, and every problem found (unknown rule names included)."""
    ruleset, errors = apply_overrides_checked(ruleset, overrides)
    return ruleset, [str(e) for e in errors]


def apply_overrides_checked(
    ruleset: RuleSet, overrides: dict[str, RuleOverride]
) -> tuple[RuleSet, list[OverrideError]]:
    """As apply_overrides, with each problem naming its rule and field so a caller can position it in the config."""
    names = ruleset.names()
    errors: list[OverrideError] = []
    for name in overrides:
        if name not in names:
            close = difflib.get_close_matches(name, names, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            errors.append(OverrideError(
                name, (), f"unknown rule {name!r}; {hint}known rules: {', '.join(names) or '(none loaded)'}"))
    rules: list[RuleBase] = []
    for rule in ruleset.rules:
        override = overrides.get(rule.alert)
        if override is None:
            rules.append(rule)
            continue
        if override.disabled:
            continue
        changed, problems = _override_one(rule, override)
        errors.extend(problems)
        rules.append(changed)
    kept = {r.alert for r in rules}
    sources = {name: src for name, src in ruleset.sources.items() if name in kept}
    return RuleSet(tuple(rules), sources), errors
