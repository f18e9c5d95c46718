"""Kind `peer`: one member deviates from its peers (consumer-side), or all of them do (broker-side).

    - alert: OneGroupLagging
      kind: peer
      table: consumer_group
      value: lag
      peers_by: [cluster, topic]    # the peer set: groups consuming the same topic
      member: group                 # what distinguishes members
      above: {warning: 1000, critical: 100000}
      peer_reduce: median           # peers' typical value must stay under the warning level

    - alert: AllGroupsLagging
      kind: peer
      mode: all                     # every member (at least min_members) above its level
      ...
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from rules.expressions import Expression, ExpressionField
from rules.kinds.base import Problem, RuleBase
from rules.kinds.threshold import Levels, level_expressions


class PeerRule(RuleBase):
    """Compares each member's newest value with its peers' (the other members of its peer set).

    Each member's value is reduced over its fresh series (`reduce:`, max default) when the table
    key is finer than peers_by + member. Mode `outlier` fires for a member above a level while
    the `peer_reduce` of the other members is not above the lowest level (no peers: no alert;
    a threshold rule covers a lone member). Mode `all` fires once per peer set when at least
    `min_members` members exist and every one is above a level; its value is the smallest
    member value. Template values: `peer_value` (the peers' reduced value), `peers` (how many
    other members), `peers_above` (how many of them are above the lowest level).
    """

    kind: Literal["peer"] = "peer"
    extra_template_values = ("peer_value", "peers", "peers_above")
    value: ExpressionField = Field(description="the number compared, per member")
    where: ExpressionField | None = Field(None, description="only series whose newest sample matches count")
    peers_by: tuple[str, ...] = Field(description="columns that define a peer set, e.g. [cluster, topic]")
    member: str = Field(description="the column that tells members apart, e.g. group")
    mode: Literal["outlier", "all"] = Field("outlier", description="one member off (outlier) or every member off (all)")
    peer_reduce: Literal["median", "avg", "max", "min"] = Field(
        "median", description="how the other members' values combine into the peer value"
    )
    min_members: int = Field(2, ge=1, description="mode all: fewest members a peer set needs to fire")
    above: Levels = Field(description="a member is 'off' when its value > level")

    @model_validator(mode="after")
    def _by(self) -> PeerRule:
        if self.by is not None:
            raise ValueError("a peer rule's labels are peers_by (+ member in outlier mode); leave `by` out")
        return self

    @property
    def group_by(self) -> tuple[str, ...]:
        """peers_by + member (outlier) or peers_by (all)."""
        return self.member_key if self.mode == "outlier" else self.peers_by

    @property
    def member_key(self) -> tuple[str, ...]:
        """The columns of one member."""
        return (*self.peers_by, self.member)

    @property
    def reduces(self) -> bool:
        """True when several series make one member."""
        return not set(self.table_def.key) <= set(self.member_key)

    def expressions(self) -> dict[tuple[str | int, ...], Expression]:
        """value, where and the levels."""
        found: dict[tuple[str | int, ...], Expression] = {("value",): self.value}
        if self.where is not None:
            found[("where",)] = self.where
        found.update(level_expressions(self))
        return found

    def check(self) -> list[Problem]:
        """Base checks plus: peers_by and member are columns; member not in peers_by."""
        problems = super().check()
        for i, name in enumerate(self.peers_by):
            if self.table_def.column(name) is None:
                problems.append((("peers_by", i), f"unknown column {name!r} in {self.table}"))
        if self.table_def.column(self.member) is None:
            problems.append((("member",), f"unknown column {self.member!r} in {self.table}"))
        elif self.member in self.peers_by:
            problems.append((("member",), "`member` must not be one of `peers_by`"))
        return problems
