"""Newest-sample pruning: rules that judge each series' newest sample read only the cycles holding one.

A threshold or peer rule looks at the newest sample of each series within its lookback (ten
minutes: twenty 30 s cycles), yet finding that sample meant sorting the whole lookback window
of the table, and building each view at every cycle of it. Here one small job first finds the
sample times that are some series' newest (usually just the last cycle, plus a few stale ones);
the rules then read the table, or build the view, at those times only, and Parquet skips every
file of the other cycles by its ts statistics.

Why the result is unchanged: each series' newest time T is in the set, and no row of that series
in the set is newer than T, so the newest row among the kept rows is the newest row of the
window. A view is built from every source row at a kept time, so its rows there are the rows the
full view has there (peer counts included); its own series' newest times come from the rows
that make its rows (`ViewDef.rows`), so they are in the set too.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from rules.kinds.base import RuleBase
from spark.kinds.common import in_window
from spark.views import VIEW_DEFS

# Kinds whose plans look at nothing but each series' newest sample in the lookback.
NEWEST_ONLY_KINDS = frozenset({"threshold", "peer"})


def reads_newest_only(rule: RuleBase) -> bool:
    """True when the rule's plan reads only each series' newest sample (threshold, peer)."""
    return rule.kind in NEWEST_ONLY_KINDS


def _rows(name: str, windows: Mapping[str, DataFrame]) -> DataFrame:
    return VIEW_DEFS[name].rows(windows) if name in VIEW_DEFS else windows[name]


def newest_times(windows: Mapping[str, DataFrame], starts: Mapping[str, tuple[datetime, Sequence[str]]],
                 now: datetime) -> dict[str, list[datetime]]:
    """For each table or view in `starts` (name -> (lookback start, series key)), the times that are
    some series' newest sample in [start, now]: one Spark job for all of them."""
    parts = []
    for name, (start, key) in starts.items():
        newest = in_window(_rows(name, windows), start, now).groupBy(*key).agg(F.max("ts").alias("ts"))
        parts.append(newest.select(F.lit(name).alias("_name"), "ts").distinct())
    times: dict[str, list[datetime]] = defaultdict(list)
    if parts:
        for row in reduce(DataFrame.unionByName, parts).collect():
            times[row["_name"]].append(row["ts"])
    return {name: sorted(times.get(name, [])) for name in starts}


def at_times(windows: Mapping[str, DataFrame], sources: Sequence[str], times: Sequence[datetime]) -> dict[str, DataFrame]:
    """The source windows cut down to the rows sampled at `times` (none when `times` is empty)."""
    # A literal IN list, not a join: Parquet compares it with each file's ts statistics and skips
    # the files of every other cycle without reading them.
    keep = F.col("ts").isin(list(times)) if times else F.lit(False)
    return {name: windows[name].where(keep) for name in sources if name in windows}
