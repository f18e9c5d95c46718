"""Causal links between rules: which alerts explain which, so one incident is one page.

A rule says which other rules' alerts its own alerts explain, with the labels both must share and
the RocketMQ behaviour that makes one produce the other:

    - alert: StuckMessage
      kind: stall
      ...
      explains:
        - alert: ConsumerOffsetStalled           # the consequence (any loaded or built-in rule)
          on: [cluster, group, topic, broker, queue_id]   # equal on cause and consequence
          why: >-                                # one sentence, RocketMQ's real behaviour
            A concurrently consuming client commits the lowest offset still in flight, so the stuck
            message pins the committed offset of its queue.

An alert of the rule (the cause) explains an alert of `alert` (the consequence) when every label in
`on` is present and equal on both. A rule's alerts carry its `by` columns (the table key when `by`
is left out; peers_by + member for peer rules) and its static `labels`, so `on` names only labels
both rules carry: `rocketwatch check` refuses one that either side never has.

Whole-set rules, checked after every file is loaded (rules/link_checks.py) and again after
`rule_overrides`: `alert:` names a loaded rule or one of the built-in pack (a link to a pack rule
that is not loaded, or is disabled by an override, stays declared and never matches); a rule
does not explain itself, names a consequence once, and the links form no cycle (A explains B
explains A), so among any alerts at least one is explained by none of the others: the root.

Operators add and drop links without forking a file (rules/overrides.py):

    rule_overrides:
      StuckMessage:
        explains:                      # added; a link to a rule it already explains replaces it
          - {alert: SiteQueueAlert, on: [cluster, group], why: "..."}
        explains_drop: [ConsumeDelayHigh]

CausalLinks is the query side the alert engine uses: which present alert explains which, the
root among an incident's alerts, and the `why` sentence to print. It needs no pyspark and no daemon.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from rules.link_spec import LinkSpec

__all__ = ["AlertLike", "CausalLinks", "Link", "LinkSpec", "RuleLike", "alert_labels"]


class RuleLike(Protocol):
    """What links read of a rule (rules.kinds.base.RuleBase; not imported: the kinds import the link spec)."""

    @property
    def alert(self) -> str: ...

    @property
    def explains(self) -> tuple[LinkSpec, ...]: ...

    @property
    def group_by(self) -> Sequence[str]: ...

    @property
    def labels(self) -> Mapping[str, str]: ...


def alert_labels(rule: RuleLike) -> frozenset[str]:
    """Label names every alert of `rule` carries: its `by` columns (or the table key) and its static labels."""
    return frozenset(rule.group_by) | frozenset(rule.labels)


@dataclass(frozen=True)
class Link:
    """A declared link: alerts of `cause` explain alerts of `effect` whose `on` labels are equal."""

    cause: str
    effect: str
    on: tuple[str, ...]
    why: str

    def matches(self, cause_labels: Mapping[str, str], effect_labels: Mapping[str, str]) -> bool:
        """True when every `on` label is present on both label sets with the same value."""
        return all(k in cause_labels and k in effect_labels and cause_labels[k] == effect_labels[k] for k in self.on)


class AlertLike(Protocol):
    """Anything with a rule name and labels: a Finding, a tracked alert instance."""

    @property
    def rule(self) -> str: ...

    @property
    def labels(self) -> Mapping[str, str]: ...


A = TypeVar("A", bound=AlertLike)


class CausalLinks:
    """The links of one rule set, indexed both ways; read-only after construction (depths are memoised)."""

    def __init__(self, links: Iterable[Link]) -> None:
        self._links: dict[tuple[str, str], Link] = {}
        causes: dict[str, list[Link]] = {}
        effects: dict[str, list[Link]] = {}
        for link in links:
            self._links[(link.cause, link.effect)] = link
            causes.setdefault(link.effect, []).append(link)
            effects.setdefault(link.cause, []).append(link)
        self._causes = {name: tuple(found) for name, found in causes.items()}
        self._effects = {name: tuple(found) for name, found in effects.items()}
        self._depth: dict[str, int] = {}

    @classmethod
    def from_rules(cls, rules: Iterable[RuleLike] | object) -> CausalLinks:
        """The links declared by `rules` (rules, or a RuleSet holding them) whose consequence is among them."""
        rule_list: list[RuleLike] = list(getattr(rules, "rules", rules))  # type: ignore[arg-type]
        present = {rule.alert for rule in rule_list}
        return cls(Link(rule.alert, spec.alert, spec.on, spec.why.strip())
                   for rule in rule_list for spec in rule.explains if spec.alert in present)

    @property
    def links(self) -> tuple[Link, ...]:
        """Every link, in declaration order."""
        return tuple(self._links.values())

    def link(self, cause: str, effect: str) -> Link | None:
        """The link from rule `cause` to rule `effect`, or None."""
        return self._links.get((cause, effect))

    def why(self, cause: str, effect: str) -> str:
        """The sentence that says how `cause` produces `effect`; KeyError when no link joins them."""
        found = self.link(cause, effect)
        if found is None:
            raise KeyError(f"{cause} does not explain {effect}")
        return found.why

    def explains(self, cause_alert: str, cause_labels: Mapping[str, str],
                 effect_alert: str, effect_labels: Mapping[str, str]) -> Link | None:
        """The link when this cause alert explains this effect alert (rules linked, `on` labels equal), else None."""
        found = self.link(cause_alert, effect_alert)
        return found if found is not None and found.matches(cause_labels, effect_labels) else None

    def causes_of(self, effect: str) -> tuple[Link, ...]:
        """Links into rule `effect`: the rules whose alerts may explain its alerts."""
        return self._causes.get(effect, ())

    def effects_of(self, cause: str) -> tuple[Link, ...]:
        """Links out of rule `cause`: the rules whose alerts its alerts may explain."""
        return self._effects.get(cause, ())

    def is_root(self, alert: str) -> bool:
        """True when no rule explains rule `alert`."""
        return not self.causes_of(alert)

    def depth(self, alert: str) -> int:
        """Longest chain of causes above rule `alert`: 0 for a root; causes sort before their consequences."""
        if alert not in self._depth:
            # The loader refuses cycles; the placeholder keeps links built from an unchecked set from
            # recursing for ever (a cause met again on its own chain counts as a root there).
            self._depth[alert] = 0
            self._depth[alert] = max((self.depth(link.cause) + 1 for link in self.causes_of(alert)), default=0)
        return self._depth[alert]

    def explaining(self, alert: A, present: Iterable[A]) -> list[tuple[A, Link]]:
        """The alerts of `present` that explain `alert`, with their links; the most upstream cause first."""
        found = [(other, link) for other in present
                 if (link := self.explains(other.rule, other.labels, alert.rule, alert.labels)) is not None]
        return sorted(found, key=lambda pair: self.depth(pair[0].rule))

    def roots(self, alerts: Sequence[A]) -> list[A]:
        """The alerts no other alert of `alerts` explains, in the given order.

        Never empty for a non-empty list, since the loader refuses cycles.
        """
        return [alert for alert in alerts if not self.explaining(alert, alerts)]

    def ordered(self, alerts: Sequence[A]) -> list[A]:
        """`alerts` with each cause before what it explains among them (roots first), otherwise in the given order."""
        # Depth among the present alerts, not the rules': a rule with causes is still a root here when
        # none of its causes fires.
        explained_by = [[j for j, other in enumerate(alerts) if j != i and self.explains(
            other.rule, other.labels, alert.rule, alert.labels)] for i, alert in enumerate(alerts)]
        depth: dict[int, int] = {}

        def depth_of(i: int) -> int:
            if i not in depth:
                depth[i] = 0  # acyclic by the loader; the placeholder only guards hand-built links
                depth[i] = max((depth_of(j) + 1 for j in explained_by[i]), default=0)
            return depth[i]

        return [alerts[i] for i in sorted(range(len(alerts)), key=depth_of)]
