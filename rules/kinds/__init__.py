"""Registry of rule kinds: the YAML `kind:` value -> its pydantic model (spark/kinds has the plans)."""

from __future__ import annotations

from rules.kinds.absent import AbsentRule
from rules.kinds.base import RuleBase
from rules.kinds.churn import ChurnRule
from rules.kinds.growth import GrowthRule
from rules.kinds.peer import PeerRule
from rules.kinds.stall import StallRule
from rules.kinds.threshold import ThresholdRule

KINDS: dict[str, type[RuleBase]] = {
    "threshold": ThresholdRule,
    "growth": GrowthRule,
    "stall": StallRule,
    "peer": PeerRule,
    "absent": AbsentRule,
    "churn": ChurnRule,
}

__all__ = ["KINDS", "AbsentRule", "ChurnRule", "GrowthRule", "PeerRule", "RuleBase", "StallRule", "ThresholdRule"]
