"""How a cycle runs for its size: how many partitions its kept frames get, and whether Spark
interprets its operators or generates code for them (spark/codegen.py)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from spark.store_layout import Commit

# A cycle whose new rows hold at most this many rows per table keeps every frame in one partition
# (a steady cycle up to ~4M queue series: one collection cycle), so its folds need no shuffle: at
# 1.6M queue series a steady cycle took 22 s in one partition, 34 s spread over four. Bigger
# folds, a rebuild over a big window, are spread over one partition per PARTITION_ROWS rows of the
# biggest table: at 160k queue series a rebuild folds 5M rows per table, and one partition each
# ran the 1 GiB heap out.
ONE_PARTITION_MAX_ROWS = 4_000_000
PARTITION_ROWS = 500_000

# A steady cycle whose biggest table brings fewer new rows than this runs Spark's interpreted
# operators; bigger ones, and every rebuild, run generated code. The generated classes are compiled
# once and reused by every later cycle (`now` is not in their source, spark/codegen.py), but
# generating their source and finding it in the cache is a fixed cost per cycle; the interpreter
# costs per row. Steady cycles of the built-in pack, the two ways alternating on one store (a
# shared machine): 1k queue series 2.14 s interpreted against 2.45 s generated; 5k 1.71 / 1.90 s;
# 16k 1.98 / 1.61 s; 160k generated 3.5-3.8 s (interpreted 6.56 s, quiet).
GENERATED_MIN_ROWS = 10_000


def biggest_table_rows(commits: Sequence[Commit]) -> int:
    """The most rows any one table holds in `commits`."""
    rows: dict[str, int] = defaultdict(int)
    for commit in commits:
        for table, count in commit.rows.items():
            rows[table] += count
    return max(rows.values(), default=0)


@dataclass(frozen=True)
class Sizing:
    """Where a cycle changes how it runs, by the rows its new commits bring (the defaults above;
    the differential tests run small stores through the big clusters' ways too)."""

    one_partition_max_rows: int = ONE_PARTITION_MAX_ROWS
    partition_rows: int = PARTITION_ROWS
    generated_min_rows: int = GENERATED_MIN_ROWS

    def partitions(self, commits: Sequence[Commit]) -> int:
        """How many partitions each kept frame gets when `commits` are folded (1 for a steady cycle)."""
        biggest = biggest_table_rows(commits)
        return 1 if biggest <= self.one_partition_max_rows else -(-biggest // self.partition_rows)

    def interpreted(self, commits: Sequence[Commit], rebuild: bool) -> bool:
        """Whether folding `commits` runs interpreted operators: a steady cycle bringing few rows."""
        return not rebuild and biggest_table_rows(commits) < self.generated_min_rows
