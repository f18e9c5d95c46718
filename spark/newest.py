"""Newest-sample pruning: rules that judge each series' newest sample read only the cycles holding one.

A threshold or peer rule looks at the newest sample of each series within its lookback (ten
minutes: twenty 30 s cycles), yet finding that sample meant sorting the whole lookback window
of the table, and building each view at every cycle of it. The sample times that are some
series' newest (usually just the last cycle, plus a few stale ones) are known beforehand
(spark/newest_state.py); the rules then read the table, or build the view, at those times only,
from the files holding them (spark/store_reader.read_at).

Why the result is unchanged: each series' newest time T is in the set, and no row of that series
in the set is newer than T, so the newest row among the kept rows is the newest row of the
window. A view is built from every source row at a kept time, so its rows there are the rows the
full view has there (peer counts included); its own series' newest times come from the rows
that make its rows (`ViewDef.rows`), so they are in the set too.
"""

from __future__ import annotations

from rules.kinds.base import RuleBase

# Kinds whose plans look at nothing but each series' newest sample in the lookback.
NEWEST_ONLY_KINDS = frozenset({"threshold", "peer"})


def reads_newest_only(rule: RuleBase) -> bool:
    """True when the rule's plan reads only each series' newest sample (threshold, peer)."""
    return rule.kind in NEWEST_ONLY_KINDS

