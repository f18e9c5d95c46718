"""Operators tune loaded rules (usually the built-in pack) from the daemon config, without forking them.

    rule_overrides:
      ProcessQueueSpanTooLong:
        for: 10s                       # replaces
        over: 2m                       # the window of a stall, growth, churn or absent rule; replaces
        labels: {team: payments}       # merged into the rule's labels
        above: {critical: 5000}        # replaces only the levels given
        exclude: {group: "test-.*"}    # regex, full match; added to the rule's own excludes
        explains:                      # causal links added (rules/links.py); one to a rule it
          - alert: SiteQueueAlert      # already explains replaces that link
            on: [cluster, group]
            why: "..."
        explains_drop: [ConsumeDelayHigh]   # causal links removed
      SomeNoisyRule: {disabled: true}

The links of the resulting set are checked again (names, labels, cycles): a link an override adds
is reported under that override's entry.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from rules.durations import Duration
from rules.kinds.base import RuleBase
from rules.kinds.threshold import Levels
from rules.link_checks import link_problems
from rules.link_spec import LinkSpec
from rules.loader import builtin_rule_names
from rules.models import RuleSet


class RuleOverride(BaseModel):
    """Changes to one rule; unset fields leave the rule as it is."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    disabled: bool = False
    for_: Duration | None = Field(None, alias="for")
    keep_firing_for: Duration | None = None
    over: Duration | None = None  # stall, growth, churn and absent rules' window
    labels: dict[str, str] = Field(default_factory=dict)
    above: Levels | None = None
    below: Levels | None = None
    exclude: dict[str, str] = Field(default_factory=dict)
    explains: tuple[LinkSpec, ...] = Field((), description="causal links added; one to a rule the rule already "
                                           "explains replaces that link")
    explains_drop: tuple[str, ...] = Field((), description="names of rules whose causal link is removed")


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
    if override.over is not None:
        if "over" in type(rule).model_fields:
            update["over"] = override.over
        else:
            errors.append(OverrideError(rule.alert, ("over",), f"a {rule.kind} rule has no `over` window"))
    if override.labels:
        update["labels"] = {**rule.labels, **override.labels}
    if override.exclude:
        update["exclude"] = {**rule.exclude, **override.exclude}
    if override.explains or override.explains_drop:
        update["explains"], problems = _relink(rule, override)
        errors.extend(problems)
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


def _relink(rule: RuleBase, override: RuleOverride) -> tuple[tuple[LinkSpec, ...], list[OverrideError]]:
    """The rule's links without the dropped and replaced ones, then the added ones (so they come last)."""
    errors = []
    targets = [spec.alert for spec in rule.explains]
    for i, name in enumerate(override.explains_drop):
        if name not in targets:
            close = difflib.get_close_matches(name, targets, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            errors.append(OverrideError(rule.alert, ("explains_drop", i), f"{rule.alert} has no link to {name!r}; "
                                        f"{hint}its links: {', '.join(targets) or '(none)'}"))
    gone = set(override.explains_drop) | {spec.alert for spec in override.explains}
    kept = tuple(spec for spec in rule.explains if spec.alert not in gone)
    return kept + override.explains, errors


def _link_errors(ruleset: RuleSet, overrides: dict[str, RuleOverride], names: set[str]) -> list[OverrideError]:
    """Link problems of the overridden set that an override's added links cause, under that override's entry."""
    known = names | builtin_rule_names()
    added = {rule.alert: len(rule.explains) - len(overrides[rule.alert].explains)
             for rule in ruleset.rules if rule.alert in overrides}

    def where(link: tuple[str, int]) -> tuple[str, int] | None:
        # The override's own index of a link it added; None for a link from the rule file, whose
        # problems the loader has already reported at the file's line.
        first = added.get(link[0])
        return (link[0], link[1] - first) if first is not None and link[1] >= first else None

    errors = []
    for problem in link_problems(ruleset.rules, known):
        refs = problem.cycle or ((problem.rule, problem.index),)
        found = next((ref for ref in map(where, refs) if ref is not None), None)
        if found is not None:
            field = ("explains", found[1], *problem.field)
            errors.append(OverrideError(found[0], field, problem.message))
    return errors


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
    result = RuleSet(tuple(rules), sources)
    # Names known before any rule was disabled: a link to a disabled rule stays valid and never matches.
    errors.extend(_link_errors(result, {n: o for n, o in overrides.items() if n in kept}, set(names)))
    return result, errors
