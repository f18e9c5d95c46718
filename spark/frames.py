"""The kept frames: what CycleState holds between cycles, and the statement that folds each.

A frame holds one row per series of one table or view (or per `by` group of an absent rule
grouping coarser than the table's key). Each rule keeping state there adds its kind's part (its
own columns, spark/kinds/common.Part); the rules judged from each series' newest row share the
newest part (the row itself: `ts` and the columns they read). One statement folds a frame: the
new rows grouped by the key, full-outer joined with the kept rows, every part's columns computed
from both. So a cycle folds one frame per table, whatever the number of its rules: at 160k
queue series a table's newest row and a stall rule's runs in two frames meant the series' key
twice in memory and two sorts and joins of it per cycle.

A churn rule keeps one row per group and sample time: a frame of its own (fold_churn).

A frame's signature is a hash of its fold statement (placeholders for the kept and new rows) and
its source's columns: what its rows depend on, and nothing else. Kept frames are found by it, so
a reload or a restart rebuilds only the frames whose folding changed: not for a rule's texts,
links or levels judged from the newest rows, and a rule's part is named after its alert, not its
place in the rule files.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from rules.kinds.base import RuleBase
from rules.tables import TABLES, VIEWS, Table
from spark.kinds import KINDS
from spark.kinds.common import Part, columns_read, lookback, select, sql_type, sub
from spark.sizing import coalesced
from spark.sql import ago, name, names, struct
from spark.views import VIEW_DEFS, compute_view


@dataclass
class Frame:
    """One kept frame: its id (a placeholder name), source, key, and the parts of its rules."""

    id: str
    source: str
    key: tuple[str, ...]
    parts: dict[str, Part] = field(default_factory=dict)  # rule alert (or NEWEST) -> part
    rule: RuleBase | None = None  # a rule with a frame of its own (churn)
    stale_after: timedelta = timedelta(0)  # the churn rule's

    @property
    def signature(self) -> str:
        """What the frame's rows depend on: its fold statement and its source's columns, hashed."""
        sources = VIEW_DEFS[self.source].sources if self.source in VIEW_DEFS else (self.source,)
        rows = f"({compute_view(self.source, {s: s for s in sources})})" if self.source in VIEW_DEFS else "{rows}"
        columns = [(c.name, c.type, c.derived) for s in sources for c in TABLES[s].columns]
        text = f"{self.fold('{kept}', rows, 1)}\n{columns}"
        return hashlib.sha256(text.encode()).hexdigest()[:20]

    def fold(self, kept: str | None, rows: str, partitions: int) -> str:
        """The statement folding the new rows `rows` into the kept rows `kept` (None: nothing kept yet)."""
        if self.rule is not None:
            return select(["*"], coalesced(sub(KINDS[self.rule.kind].fold(self.rule, kept, rows, self.stale_after)),
                                           partitions))
        return fold_statement(self, kept, rows, partitions)

    def view(self, alert: str) -> str:
        """The relation a rule's judge reads from this frame."""
        if self.rule is not None:
            return f"{{{self.id}}}"
        return self.parts[alert].view(f"{{{self.id}}}")


NEWEST = ""  # the parts key of the newest part


def table(source: str) -> Table:
    """The table or view `source`."""
    return TABLES[source] if source in TABLES else VIEWS[source]


def plan_frames(rules: Sequence[RuleBase], stale_after: timedelta) -> dict[str, Frame]:
    """The frames `rules` keep, by id, and (through Frame.view) where each rule's state is."""
    frames: dict[tuple[str, tuple[str, ...]], Frame] = {}
    own: list[Frame] = []
    newest_columns: dict[str, list[str]] = {}
    newest_lookback: dict[str, timedelta] = {}

    def frame(source: str, key: tuple[str, ...]) -> Frame:
        return frames.setdefault((source, key), Frame(f"f{len(frames)}", source, key))

    for rule in rules:
        kind = KINDS[rule.kind]
        stale = rule.stale_after or stale_after
        if kind.reads_newest:
            back = lookback(stale)
            newest_lookback[rule.table] = max(back, newest_lookback.get(rule.table, back))
            newest_columns.setdefault(rule.table, [])
            newest_columns[rule.table] += columns_read(rule)
            frame(rule.table, table(rule.table).key)
        elif kind.part is not None:
            part = kind.part(rule, f"r{hashlib.sha256(rule.alert.encode()).hexdigest()[:8]}_", stale)
            frame(rule.table, part.key).parts[rule.alert] = part
        else:
            own.append(Frame(f"c{len(own)}", rule.table, rule.group_by, rule=rule, stale_after=stale))
    for source, columns in newest_columns.items():
        frames[(source, table(source).key)].parts[NEWEST] = newest_part(source, columns, newest_lookback[source])
    return {f.id: f for f in [*frames.values(), *own]}


def newest_part(source: str, columns: Sequence[str], back: timedelta) -> Part:
    """Each series' newest row: `ts` and `columns` (only those its rules read: at 160k queue series
    whole rows of every table did not fit the driver's storage memory), dropped after `back`."""
    t = table(source)
    kept = ["ts", *(c for c in t.column_names if c in set(columns) and c not in t.key and c != "ts")]
    newer = "n.`_newest_ts` IS NOT NULL AND (s.`ts` IS NULL OR n.`_newest_ts` >= s.`ts`)"
    return Part(
        key=t.key,
        types={c: sql_type(t, c) for c in kept},
        new={"_newest_ts": "max(`ts`)", "_newest": f"max_by({struct({c: name(c) for c in kept})}, `ts`)"},
        fold={c: f"CASE WHEN {newer} THEN n.`_newest`.{name(c)} ELSE s.{name(c)} END" for c in kept},
        alive=f"`ts` >= {ago(back)}",
        view=lambda frame: sub(select([names(t.key), names(kept)], frame, "`ts` IS NOT NULL")),
    )


def fold_statement(frame: Frame, state: str | None, rows: str, partitions: int) -> str:
    """The statement folding the new rows `rows` into the kept rows `state` (None: nothing kept yet).

    The kept rows (their parts' columns in one struct, `s`) and the new rows are grouped by the key
    in one aggregate (one sort of both, the same as ranking them for each series' newest row), not
    joined: a full outer join sorted both sides again.
    """
    key = frame.key
    parts = list(frame.parts.values())
    keyed = table(frame.source)
    columns = [c for c in keyed.column_names if c not in key]
    computed = [c for p in parts for c in p.rows]
    kept_type = "STRUCT<" + ", ".join(f"{name(c)}: {t}" for p in parts for c, t in p.types.items()) + ">"
    new_rows = select([names(key), f"CAST(NULL AS {kept_type}) AS `_s`", names(columns),
                       *(f"{sql} AS {name(c)}" for p in parts for c, sql in p.rows.items())], rows)
    rows_of = []
    if state is not None:
        kept = struct({c: name(c) for p in parts for c in p.types})
        rows_of.append(select([names(key), f"{kept} AS `_s`", *(f"NULL AS {name(c)}" for c in [*columns, *computed])],
                              state))
    rows_of.append(new_rows)
    both = " UNION ALL ".join(f"({r})" for r in rows_of)
    grouped = select([names(key), "first(`_s`, TRUE) AS `s`",
                      *(f"{sql} AS {name(c)}" for p in parts for c, sql in p.new.items())],
                     coalesced(f"({both})", partitions), group_by=key)
    folded = select([names(key), *(f"{sql} AS {name(c)}" for p in parts for c, sql in p.fold.items())],
                    f"({grouped}) AS n")
    finished = select([names(key), *(f"{p.finish.get(c, name(c))} AS {name(c)}" for p in parts for c in p.types)],
                      sub(folded))
    # A part that holds nothing any more is nulled (a sample arriving later starts it afresh), a
    # series none of whose parts holds anything is dropped. Each part's condition is a column of its
    # own: written into every column's CASE, two parts' conditions were common subexpressions whose
    # order in the generated code followed their hashes, `now` included, and a cycle could compile
    # its projection again (tests/spark/test_compiled_code.py).
    flagged = select(["*", *(f"coalesce({p.alive}, FALSE) AS `_alive{i}`" for i, p in enumerate(parts))], sub(finished))
    return select([names(key), *(f"CASE WHEN `_alive{i}` THEN {name(c)} END AS {name(c)}"
                                 for i, p in enumerate(parts) for c in p.types)],
                  sub(flagged), " OR ".join(f"`_alive{i}`" for i in range(len(parts))))
