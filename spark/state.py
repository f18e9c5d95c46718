"""CycleState: everything the evaluation engine carries from one cycle to the next, in one place.

The state is a cache of the store's history, never a second source of truth: dropping it and
folding every committed cycle of the window again (a rebuild) gives the same findings.

- the kept frames (spark/frames.py), by signature: one per table or view and key, each series'
  newest row and every rule's part there (stall runs, growth samples, absent last-seen rows); one
  per churn rule (its member sets). spark/kinds/<kind>.py says what each part holds;
- which committed cycles are folded in: their names, and per cluster the newest one's ts.
Every kept frame has folded the same cycles: a frame new to the state (a rule added or changed)
is folded from every committed cycle of the window in the cycle it joins.

Every frame is local-checkpointed (held by Spark's block manager, serialized, lineage cut), so a
cycle's plans reference last cycle's results, never the history that built them. A cycle's new
frames are computed by the same collect that judges the rules (spark/evaluate.py), and the
frames they replace are freed only then, or once a save reading them is done (Pins).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from pyspark import StorageLevel
from pyspark.sql import DataFrame

from spark.store_layout import Commit

log = logging.getLogger(__name__)


class Pins:
    """Kept frames a save is reading (spark/saved_state.py): their blocks are freed once it is done."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._read: set[int] = set()
        self._waiting: list[DataFrame] = []

    def free(self, frames: Iterable[DataFrame]) -> None:
        """Free the blocks of `frames` now, or once no save reads them."""
        with self._lock:
            for frame in frames:
                if id(frame) in self._read:
                    self._waiting.append(frame)
                else:
                    release(frame)

    @contextmanager
    def reading(self, frames: Iterable[DataFrame]) -> Iterator[None]:
        """Keep `frames`' blocks while the block runs."""
        ids = {id(f) for f in frames}
        with self._lock:
            self._read |= ids
        try:
            yield
        finally:
            with self._lock:
                self._read -= ids
                waiting, self._waiting = self._waiting, []
            self.free(waiting)


@dataclass
class Frames:
    """The kept frames by signature (spark/frames.py: one per table or view and key, one per churn rule)."""

    frames: dict[str, DataFrame] = field(default_factory=dict)
    pins: Pins = field(default_factory=Pins)

    def all(self) -> list[DataFrame]:
        """Every kept frame."""
        return list(self.frames.values())

    def materialize(self) -> None:
        """Compute every frame the cycle's collect did not (a rule whose plan failed), so that none
        depends on the frames it was folded from once those are released."""
        for frame in self.all():
            if not is_checkpointed(frame):
                frame.count()

    def release(self, keep: Frames | None = None) -> None:
        """Free the blocks of every frame, except those also in `keep`."""
        kept = {id(f) for f in keep.all()} if keep is not None else set()
        self.pins.free(f for f in self.all() if id(f) not in kept)


@dataclass
class CycleState:
    """The kept state of one Evaluator: its frames and the committed cycles they have folded."""

    horizon: timedelta
    frames: Frames = field(default_factory=Frames)
    folded_at: datetime | None = None
    folded: dict[str, datetime] = field(default_factory=dict)
    cursor: dict[str, datetime] = field(default_factory=dict)
    # Cycles before this were pruned from `folded` (or never folded: older than every window then);
    # a window grown since lists them again, but only the frames folded afresh need them.
    covered_from: datetime | None = None

    def doubt(self, now: datetime, commits: Sequence[Commit]) -> str | None:
        """Why this state cannot be brought to `now` by folding `commits` (the store's cycles of the
        window), or None when it can."""
        if self.folded_at is not None and now < self.folded_at:
            return f"evaluation time went back from {self.folded_at:%H:%M:%S} to {now:%H:%M:%S}"
        if self.folded_at is not None and now - self.folded_at > self.horizon:
            return f"no evaluation for {now - self.folded_at}, longer than the longest window ({self.horizon})"
        listed = {c.name for c in commits}
        gone = sorted(name for name, ts in self.folded.items() if ts >= now - self.horizon and name not in listed)
        if gone:
            return f"cycle {gone[0]} was folded but the store no longer lists it ({len(gone)} such)"
        for commit in self.unfolded(commits):
            late = [c for c in commit.clusters if c in self.cursor and commit.ts <= self.cursor[c]]
            if late:
                return (f"cycle {commit.name} of cluster {', '.join(late)} committed after a newer one of the "
                        f"same cluster was folded")
        return None

    def unfolded(self, commits: Iterable[Commit]) -> list[Commit]:
        """The commits not folded yet, in commit order."""
        return [c for c in commits if c.name not in self.folded and c.clusters
                and (self.covered_from is None or c.ts >= self.covered_from)]


    def replace(self, frames: Frames, commits: Iterable[Commit], now: datetime) -> None:
        """Keep `frames`, folded from `commits` at `now`; the frames they replace are freed."""
        self.frames.release(keep=frames)
        self.frames = Frames(frames.frames, self.frames.pins)
        for commit in commits:
            self.folded[commit.name] = commit.ts
            for cluster in commit.clusters:
                if cluster not in self.cursor or commit.ts > self.cursor[cluster]:
                    self.cursor[cluster] = commit.ts
        self.folded_at = now
        # Commits older than the horizon are never listed again (unless the horizon grows: covered_from).
        self.covered_from = now - self.horizon
        self.folded = {name: ts for name, ts in self.folded.items() if ts >= self.covered_from}

    def release(self) -> None:
        """Free every kept frame (the state is being dropped)."""
        self.frames.release()
        self.frames = Frames(pins=self.frames.pins)


# Serialized (pyspark's MEMORY_AND_DISK is the JVM's MEMORY_AND_DISK_SER): a block is a few byte
# arrays instead of an object per row, so the kept frames, most of the heap at scale, cost the
# garbage collector next to nothing. At 160k queue series the steady cycle fell from 5.07 s to
# 4.24 s (median of 4, generated code); at 16k, 2.03 s to 1.89 s.
KEPT = StorageLevel.MEMORY_AND_DISK
# The body of Dataset.localCheckpoint, without the SQL execution it runs in: that execution renders
# the plan as text for the SQL listener and announces it, though a lazy checkpoint computes
# nothing. 8 of a 16-series steady cycle's 23 SQL executions were these (steady cycle, median of
# 11 alternating on one store: 1.12 s against 1.25 s). Spark's compiled name for it: when a Spark
# release renames it, checkpoint() falls back to localCheckpoint.
_CHECKPOINT_BODY = "$anonfun$checkpoint$1"  # (dataset, reliable, storage level, eager, physical plan)
_has_body: bool | None = None  # looked up once per process


def checkpoint(frame: DataFrame) -> DataFrame:
    """`frame` to be held in Spark's block manager with its lineage cut, once the cycle's collect
    has computed it (one job for the fold and the judgement instead of one per frame)."""
    jdf = getattr(frame, "_jdf", None)  # None with Spark Connect
    if jdf is not None and _checkpoint_body_exists(frame):
        from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame

        context = frame.sparkSession.sparkContext
        jvm = context._jvm  # noqa: SLF001
        body = getattr(jvm.org.apache.spark.sql.classic.Dataset, _CHECKPOINT_BODY)
        level = jvm.scala.Some(context._getJavaStorageLevel(KEPT))  # noqa: SLF001
        return ClassicDataFrame(body(jdf, False, level, False, jdf.queryExecution().executedPlan()), frame.sparkSession)
    return frame.localCheckpoint(eager=False, storageLevel=KEPT)


def _checkpoint_body_exists(frame: DataFrame) -> bool:
    global _has_body
    if _has_body is None:
        jvm = frame.sparkSession.sparkContext._jvm  # noqa: SLF001
        methods = jvm.java.lang.Class.forName("org.apache.spark.sql.classic.Dataset").getMethods()
        _has_body = any(m.getName() == _CHECKPOINT_BODY and m.getParameterCount() == 5 for m in methods)
        if not _has_body:
            log.info("Spark %s has no Dataset.%s: kept frames are checkpointed by localCheckpoint, one SQL "
                     "execution each", frame.sparkSession.version, _CHECKPOINT_BODY)
    return _has_body


def _checkpointed_rdd(frame: DataFrame) -> object:
    return frame._jdf.queryExecution().logical().rdd()  # noqa: SLF001


def is_checkpointed(frame: DataFrame) -> bool:
    """Whether a kept frame's blocks are computed (its lineage cut)."""
    try:
        return bool(_checkpointed_rdd(frame).isCheckpointed())
    except Exception:  # not a checkpoint (an empty frame): nothing to compute
        return True


def release(frame: DataFrame) -> None:
    """Unpersist the blocks behind a local-checkpointed frame (freed only at a JVM GC otherwise)."""
    try:
        _checkpointed_rdd(frame).unpersist(False)
    except Exception:  # a frame that is not a checkpoint (an empty one) holds no blocks
        log.debug("kept frame holds no checkpointed blocks", exc_info=True)
