"""The rules the daemon runs: rule files plus the config's overrides, validated as one unit."""

from __future__ import annotations

from dataclasses import dataclass

from config.models import RocketwatchConfig
from rules.findings import RuleTiming
from rules.loader import RuleLoadError, load_rule_files
from rules.overrides import apply_overrides


@dataclass(frozen=True)
class Rulebook:
    """An immutable, validated rule set; replaced whole on reload, never patched."""

    rules: list
    timings: dict[str, RuleTiming]


def load_rulebook(config: RocketwatchConfig) -> Rulebook:
    """Load the configured rule files and apply `rule_overrides`; raise RuleLoadError on any problem."""
    ruleset = load_rule_files(config.rules)
    ruleset, errors = apply_overrides(ruleset, config.rule_overrides)
    if errors:
        raise RuleLoadError(errors)
    rules = list(ruleset.rules)
    return Rulebook(rules=rules, timings={r.alert: r.timing for r in rules})
