"""What each consumer group is judged on, and why (issue 45 step 4): shared by `diagnose` and the status page.

A group is judged on what its rows let the rules see: ProcessQueue checks when a push client's
running info lists ProcessQueues (process_queue rows), pop checks when a client's running info has
a non-empty mqPopTable (pop_queue rows), and the broker-side tables only when no running info came
back (gRPC clients through a 5.x proxy, listed CONSUME_POP, answer none and push their own metrics
over OTLP/gRPC to a collector rocketwatch does not receive; or the request failed; or no client is
online). Which rules apply is read off the rules themselves, never kept by hand: a rule about groups
applies when the group has rows in the table it reads (a view: in the view's first, required source
table, spark/views.py), unless the rule's own `where` or `exclude` rules out every row of the group
on a column that says what kind of consumer it is (`not orderly`, `not is_broadcast`, ...). A new
rule therefore shows up by itself. Pure Python over collected rows: no Spark session.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rules.expressions import BoolOp, ColumnRef, Compare, Literal, Node, Not
from rules.kinds.base import RuleBase
from rules.table_types import BOOL, STRING

PROCESS_QUEUE, POP, BROKER_SIDE = "ProcessQueue", "pop", "broker-side only"
# Listed so in the connection list by a 5.x proxy's gRPC clients; a remoting pop-mode client says CONSUME_PASSIVELY.
PROXY_CONSUME_TYPE = "CONSUME_POP"
RUNNING_INFO_CALLS = ("GET_CONSUMER_RUNNING_INFO", "running info (307)")
# Tables whose rows name the groups worth a line (topic_queue's retry/DLQ rows alone are not a consumer).
GROUP_TABLES = ("consumer_client", "consumer_queue", "process_queue", "pop_queue", "native_consumer")

Row = Mapping[str, Any]

# A view's columns that describe the kind of consumer, as the view computes them from its sources
# (spark/views.py): the where of a rule on the view is read against these.
VIEW_FACTS: dict[str, Callable[[Mapping[str, Sequence[Row]]], list[Any]]] = {
    "is_broadcast": lambda rows: [any(r.get("message_model") == "BROADCASTING" for r in rows["consumer_client"])]
    if rows["consumer_client"] else [],
}


@dataclass(frozen=True)
class Skipped:
    """Rules that read rows the group has, but whose own filter rules every such row out, and why."""

    rules: tuple[str, ...]
    why: str


@dataclass(frozen=True)
class GroupBasis:
    """One group: the kinds of checks it gets, why, the rules that can judge it and those that skip it."""

    cluster: str
    group: str
    checks: tuple[str, ...]  # PROCESS_QUEUE, POP, BROKER_SIDE
    why: tuple[str, ...]  # one sentence per check
    rules: tuple[str, ...]
    skipped: tuple[Skipped, ...] = ()
    notes: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"cluster": self.cluster, "group": self.group, "checks": list(self.checks), "why": list(self.why),
                "rules": list(self.rules), "skipped": [{"rules": list(s.rules), "why": s.why} for s in self.skipped],
                "notes": list(self.notes)}


def view_sources(table: str) -> tuple[str, ...]:
    """The tables a rule's table is computed from: a view's sources (first = required), else itself."""
    from spark.views import VIEW_DEFS  # plain Python: the view's SQL builders, no session

    return VIEW_DEFS[table].sources if table in VIEW_DEFS else (table,)


def _conjuncts(node: Node | None) -> list[Node]:
    if node is None:
        return []
    if isinstance(node, BoolOp) and node.op == "and":
        return [c for operand in node.operands for c in _conjuncts(operand)]
    return [node]


def _kind_filter(node: Node, types: Mapping[str, str]) -> tuple[str, str, Callable[[Any], bool]] | None:
    """A conjunct on what kind of consumer a row is (a boolean column, or a string column against a
    literal): its column, its text and its test. Conjuncts on state (counts, ages) are not read:
    they say when a rule fires, not whether it applies."""
    if isinstance(node, ColumnRef) and types.get(node.name) == BOOL:
        return node.name, node.name, bool
    if isinstance(node, Not) and isinstance(node.operand, ColumnRef) and types.get(node.operand.name) == BOOL:
        return node.operand.name, f"not {node.operand.name}", lambda v: not v
    if isinstance(node, Compare) and len(node.ops) == 1 and node.ops[0] in ("==", "!="):
        left, right = node.operands
        if isinstance(left, ColumnRef) and isinstance(right, Literal) and types.get(left.name) == STRING:
            want, equal = right.value, node.ops[0] == "=="
            return left.name, f"{left.name} {node.ops[0]} {want!r}", lambda v: (v == want) == equal
    return None


@dataclass(frozen=True)
class _RuleFilters:
    """One rule's sources and kind filters, worked out once per call rather than once per group."""

    rule: RuleBase
    sources: tuple[str, ...]
    filters: tuple[tuple[str, str, Callable[[Any], bool]], ...]  # (column, its text, test)

    @classmethod
    def of(cls, rule: RuleBase) -> _RuleFilters:
        """The rule's filters on what kind of consumer a row is (its `where` conjuncts)."""
        types = {c.name: c.type for c in rule.table_def.columns}
        where = getattr(rule, "where", None)
        found = [_kind_filter(c, types) for c in _conjuncts(where.tree if where is not None else None)]
        return cls(rule, view_sources(rule.table), tuple(f for f in found if f is not None))

    def values(self, column: str, mine: Mapping[str, Sequence[Row]]) -> list[Any]:
        """The group's values of `column` as the rule's table holds them (a view's: from its sources)."""
        if not self.rule.is_view:
            return [r[column] for r in mine.get(self.rule.table, ()) if column in r]
        if column in VIEW_FACTS:
            return VIEW_FACTS[column](mine)
        return [r[column] for t in self.sources for r in mine.get(t, ()) if column in r]

    def why_not(self, mine: Mapping[str, Sequence[Row]]) -> str | None:
        """Why the rule's own filters leave none of the group's rows, or None when some row can match."""
        for column, text, test in self.filters:
            values = [v for v in self.values(column, mine) if v is not None]
            if values and not any(test(v) for v in values):
                return f"{_FACT.get(column, f'none of its rows has {text}')} (the rule reads only rows where `{text}`)"
        for column, pattern in self.rule.exclude.items():
            values = self.values(column, mine)
            if values and all(v is not None and re.fullmatch(pattern, str(v)) for v in values):
                return f"its {column} is excluded by the rule (exclude: {column}: {pattern})"
        return None


# What a kind column being ruled out means for the operator.
_FACT = {
    "orderly": "its clients consume orderly: each queue is worked on one thread under a broker lock and a "
               "failing message is retried in place, not through %RETRY%",
    "is_broadcast": "its clients consume BROADCASTING: each keeps its own offsets on the client, so the broker's "
                    "lag and offline checks mean nothing for it",
    "dropped": "every queue it held was dropped (rebalanced away)",
}


def _by_group(rows: Mapping[str, Sequence[Row]]) -> dict[tuple[str, str], dict[str, list[Row]]]:
    """Each group's rows per table, in one pass over the rows; groups named by a consumer table only
    (topic_queue's retry and DLQ rows alone are not a consumer, system groups are RocketMQ's own)."""
    tables = (*GROUP_TABLES, "topic_queue")
    found: dict[tuple[str, str], dict[str, list[Row]]] = {}
    for table in GROUP_TABLES:
        for row in rows.get(table, ()):
            if row.get("group") and not row.get("is_system"):
                key = (str(row.get("cluster", "")), str(row["group"]))
                found.setdefault(key, {t: [] for t in tables})[table].append(row)
    for row in rows.get("topic_queue", ()):
        key = (str(row.get("cluster", "")), str(row.get("group")))
        if key in found:
            found[key]["topic_queue"].append(row)
    return found


def _clients(rows: Iterable[Row]) -> list[str]:
    return sorted({str(r["client_id"]) for r in rows if r.get("client_id")})


def _modes(group: str, mine: Mapping[str, Sequence[Row]], failures: Sequence[str]) -> tuple[list[str], list[str], list[str]]:
    checks: list[str] = []
    why: list[str] = []
    notes: list[str] = []
    pq, pop, online = mine["process_queue"], mine["pop_queue"], mine["consumer_client"]
    if pop:
        topics = ", ".join(sorted({str(r["topic"]) for r in pop}))
        checks.append(POP)
        why.append(f"the running info of {', '.join(_clients(pop))} has a non-empty mqPopTable ({topics}): pop mode, "
                   "judged on waitAckCount against popThresholdForQueue and the last pop (the connection list says "
                   "CONSUME_PASSIVELY for it, as for a push consumer)")
    if pq:
        topics = sorted({str(r["topic"]) for r in pq})
        checks.append(PROCESS_QUEUE)
        # A pop-mode client still pushes its classic %RETRY% topic: say so, or the two checks read as a contradiction.
        only_retry = pop and all(t.startswith("%RETRY%") for t in topics)
        why.append(f"the running info of {', '.join(_clients(pq))} {'also ' if pop else ''}lists {len(pq)} "
                   f"ProcessQueue(s) ({', '.join(topics)}){' of its retry topic, consumed by push' if only_retry else ''}: "
                   "judged per queue on its cache, span, last consume and committed offset")
    if checks:
        return checks, why, notes
    checks.append(BROKER_SIDE)
    if not online:
        why.append("no client is online (the broker answers 206): committed offsets, lag and the broker's own "
                   "figures only")
    elif all(r.get("consume_type") == PROXY_CONSUME_TYPE for r in online):
        why.append(f"its clients ({', '.join(_clients(online))}) are listed {PROXY_CONSUME_TYPE}: gRPC clients through "
                   "a 5.x proxy answer no running info, and their own metrics go over OTLP/gRPC to a collector "
                   "rocketwatch does not receive; lag, delay, retries and the native consumer figures only")
    else:
        asked = _clients(online)
        failed = [f for f in failures if any(k in f for k in RUNNING_INFO_CALLS)
                  and (group in f or any(c in f for c in asked))]
        if failed:
            why.append(f"the running-info request to {', '.join(asked)} failed: {failed[0]}"
                       + (f" (+{len(failed) - 1} more)" if len(failed) > 1 else ""))
        else:
            why.append(f"the running info of {', '.join(asked)} listed no ProcessQueue and no PopProcessQueue "
                       "(the request failed or the client holds no queue yet)")
            notes += [f for f in failures if any(k in f for k in RUNNING_INFO_CALLS)][:1]
    return checks, why, notes


def judged_on(rows: Mapping[str, Sequence[Row]], rules: Sequence[RuleBase],
              failures: Sequence[str] = ()) -> list[GroupBasis]:
    """Per group in `rows` (table -> rows of one collection), what it is judged on; `failures` are the
    cycle's failed calls as text (a running-info failure naming the group or a client explains it)."""
    group_rules = [_RuleFilters.of(r) for r in rules if any(c.name == "group" for c in r.table_def.columns)]
    out = []
    for (cluster, group), mine in sorted(_by_group(rows).items()):
        checks, why, notes = _modes(group, mine, failures)
        applies: list[str] = []
        skipped: dict[str, list[str]] = {}
        for plan in group_rules:
            if not any(mine.get(t) for t in plan.sources):
                continue  # nothing of this group where the rule reads: it says nothing either way
            reason = plan.why_not(mine)
            if reason is not None:
                skipped.setdefault(reason, []).append(plan.rule.alert)
            elif mine.get(plan.sources[0]):
                applies.append(plan.rule.alert)
        out.append(GroupBasis(cluster, group, tuple(checks), tuple(why), tuple(sorted(set(applies))),
                              tuple(Skipped(tuple(sorted(set(r))), w) for w, r in skipped.items()), tuple(notes)))
    return out


def health_failures(health: Iterable[Row]) -> list[str]:
    """collector_health rows that failed, as `judged_on` reads them."""
    return [f"{h['call']} to {h['target']}: {h['error']}" for h in health if not h.get("ok")]
