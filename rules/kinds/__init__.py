"""Registry of rule kinds: the YAML `kind:` value -> its pydantic model (spark/kinds has the plans)."""

from __future__ import annotations

from rules.kinds.base import RuleBase
from rules.kinds.threshold import ThresholdRule

KINDS: dict[str, type[RuleBase]] = {"threshold": ThresholdRule}

__all__ = ["KINDS", "RuleBase", "ThresholdRule"]
