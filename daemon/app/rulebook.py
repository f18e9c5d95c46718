"""The rules the daemon runs: rule files plus the config's overrides, validated as one unit."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from config.loader import ConfigLoadError, positioned_override_errors
from config.models import RocketwatchConfig
from rules.findings import RuleTiming
from rules.links import CausalLinks
from rules.loader import RuleLoadError, load_rule_files
from rules.overrides import apply_overrides_checked


@dataclass(frozen=True)
class Rulebook:
    """An immutable, validated rule set; replaced whole on reload, never patched."""

    rules: list
    timings: dict[str, RuleTiming]
    links: CausalLinks  # which rule explains which: incidents are built from them


def load_rulebook(config: RocketwatchConfig, path: Path | None = None) -> Rulebook:
    """Load the configured rule files and apply `rule_overrides`; raise RuleLoadError for a rule file's
    problems and ConfigLoadError, positioned in `path`, for an override's."""
    ruleset = load_rule_files(config.rules)
    ruleset, errors = apply_overrides_checked(ruleset, config.rule_overrides)
    if errors and path is not None:
        raise ConfigLoadError(positioned_override_errors(path, errors))
    if errors:  # a config built in code, with no file to point into
        raise RuleLoadError([f"rule_overrides.{e.rule}{''.join(f'.{f}' for f in e.field)}: {e.message}"
                             for e in errors])
    rules = list(ruleset.rules)
    return Rulebook(rules=rules, timings={r.alert: r.timing for r in rules}, links=CausalLinks.from_rules(rules))
