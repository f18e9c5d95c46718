"""The shape of a rule file: groups of rules, each rule one of the registered kinds."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Union

from pydantic import BaseModel, ConfigDict, Field

from rules.kinds import KINDS, RuleBase

# Discriminated on `kind`, built from the registry so a new kind needs no edit here.
Rule = Annotated[Union[tuple(KINDS.values())], Field(discriminator="kind")]  # noqa: UP007


class RuleGroup(BaseModel):
    """A named group of rules, as in Prometheus rule files."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    rules: list[Rule]


class RuleFile(BaseModel):
    """A whole rule file (used for `rocketwatch schema`; the loader validates rule by rule)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    groups: list[RuleGroup]


@dataclass(frozen=True)
class RuleSource:
    """Where a rule was declared."""

    file: str
    line: int
    group: str


@dataclass(frozen=True)
class RuleSet:
    """Every loaded rule, names unique, in file order, with where each came from."""

    rules: tuple[RuleBase, ...]
    sources: dict[str, RuleSource] = field(default_factory=dict)

    def names(self) -> list[str]:
        """Rule names in load order."""
        return [r.alert for r in self.rules]

    def get(self, name: str) -> RuleBase | None:
        """The rule called `name`, or None."""
        return next((r for r in self.rules if r.alert == name), None)
