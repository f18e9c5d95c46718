"""Kept state saved beside the store, so that a restarted daemon folds only the cycles committed since.

    <store>/_evaluation_state/<folded_at>-<id>/manifest.json     the cycles folded, each frame's files, rows and schema
    <store>/_evaluation_state/<folded_at>-<id>/<signature>/...   one kept frame (spark/frames.py), Parquet
    <store>/_evaluation_state/.<folded_at>-<id>.tmp/             a save in flight (or a crash)

A save writes every frame and the manifest into a "." directory and renames it into place, then
removes the saves before it: a reader finds whole saves only. Loading takes the newest one and
checks it against its manifest (every file there, each file's rows as its Parquet footer says);
a save that fails the check is logged with why and removed, and the state is rebuilt. Frames
are found by signature, so a save made under other rules still gives the frames whose folding
did not change (spark/evaluate.py folds the others from the window). The store reader and the
store's maintenance skip names starting with "_".
"""

from __future__ import annotations

import json
import logging
import shutil
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import pyarrow.parquet as pq
from pyspark.sql import DataFrame, DataFrameReader, SparkSession
from pyspark.sql.types import StructType

from spark.state import CycleState, Frames, checkpoint
from spark.store_layout import as_utc

log = logging.getLogger(__name__)

DIRECTORY = "_evaluation_state"
FORMAT = 1
# A save reads every kept frame once: at 160k queue series a few seconds of both cores, so not after
# every cycle. A restart folds at most this much more than it would have.
SAVE_EVERY = timedelta(minutes=5)
_MANIFEST = "manifest.json"


@dataclass(frozen=True)
class Snapshot:
    """What one save writes: the kept frames by signature and the cycles they folded."""

    frames: dict[str, DataFrame]
    folded: dict[str, datetime]
    cursor: dict[str, datetime]
    folded_at: datetime
    covered_from: datetime | None

    @classmethod
    def of(cls, state: CycleState) -> Snapshot:
        """The state as it stands (its frames computed, folded_at set)."""
        assert state.folded_at is not None
        return cls(dict(state.frames.frames), dict(state.folded), dict(state.cursor), state.folded_at,
                   state.covered_from)


def state_directory(store_root: str | Path) -> Path:
    """Where the evaluation state of the store at `store_root` is saved."""
    return Path(store_root) / DIRECTORY


def save(snapshot: Snapshot, directory: Path) -> Path:
    """Write `snapshot` as the newest save under `directory` and remove the older ones; returns its path."""
    directory.mkdir(parents=True, exist_ok=True)
    name = f"{snapshot.folded_at:%Y%m%dT%H%M%S%f}-{uuid.uuid4().hex[:8]}"
    tmp = directory / f".{name}.tmp"
    frames, schemas = {}, {}
    for signature, frame in snapshot.frames.items():
        frame.write.parquet(str(tmp / signature))
        frames[signature] = {p.name: pq.read_metadata(p).num_rows for p in _parquet_files(tmp / signature)}
        schemas[signature] = frame.schema.json()
    manifest = {
        "format": FORMAT,
        "folded_at": snapshot.folded_at.isoformat(),
        "covered_from": snapshot.covered_from.isoformat() if snapshot.covered_from else None,
        "folded": {n: ts.isoformat() for n, ts in snapshot.folded.items()},
        "cursor": {c: ts.isoformat() for c, ts in snapshot.cursor.items()},
        "frames": frames,
        "schemas": schemas,
    }
    (tmp / _MANIFEST).write_text(json.dumps(manifest, sort_keys=True))
    final = directory / name
    tmp.rename(final)
    for older in directory.iterdir():
        if older != final and not older.name.startswith("."):
            shutil.rmtree(older, ignore_errors=True)
    return final


def load(spark: SparkSession, directory: Path, horizon: timedelta) -> CycleState | None:
    """The newest save under `directory` as a CycleState (its frames read lazily); None when there is
    none, or when it fails its manifest's check (logged with why, the save set aside)."""
    saves = sorted(p for p in directory.glob("[!._]*") if p.is_dir()) if directory.is_dir() else []
    if not saves:
        return None
    newest = saves[-1]
    try:
        manifest = _checked(newest)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("saved evaluation state %s is unusable (%s): the state is rebuilt from the store's window",
                    newest, exc)
        shutil.rmtree(newest, ignore_errors=True)
        return None
    # With its schema given, a read is planned from the manifest alone: inferring it runs a Spark job
    # per frame to read a footer, 6 s for the first on a daemon's cold JVM (saves made before the
    # manifest held schemas are still read that way).
    schemas = manifest.get("schemas", {})
    frames = {sig: checkpoint(_reader(spark, schemas.get(sig)).parquet(str(newest / sig))) for sig in manifest["frames"]}
    covered = manifest["covered_from"]
    return CycleState(
        horizon=horizon,
        frames=Frames(frames),
        folded_at=as_utc(datetime.fromisoformat(manifest["folded_at"])),
        folded={n: as_utc(datetime.fromisoformat(ts)) for n, ts in manifest["folded"].items()},
        cursor={c: as_utc(datetime.fromisoformat(ts)) for c, ts in manifest["cursor"].items()},
        covered_from=as_utc(datetime.fromisoformat(covered)) if covered else None,
    )


def _reader(spark: SparkSession, schema: str | None) -> DataFrameReader:
    return spark.read.schema(StructType.fromJson(json.loads(schema))) if schema else spark.read


def _checked(save_dir: Path) -> dict:
    """The save's manifest, once every frame it lists has exactly its files, each with its rows."""
    manifest = json.loads((save_dir / _MANIFEST).read_text())
    if manifest.get("format") != FORMAT:
        raise ValueError(f"format {manifest.get('format')!r}, this version reads {FORMAT}")
    for signature, files in manifest["frames"].items():
        found = {p.name for p in _parquet_files(save_dir / signature)}
        if found != set(files):
            raise ValueError(f"frame {signature} holds files {sorted(found)}, the manifest lists {sorted(files)}")
        for file, rows in files.items():
            try:
                actual = pq.read_metadata(save_dir / signature / file).num_rows
            except Exception as exc:  # pyarrow's ArrowInvalid for a truncated footer
                raise ValueError(f"{signature}/{file} cannot be read: {exc}") from exc
            if actual != rows:
                raise ValueError(f"{signature}/{file} holds {actual} rows, the manifest says {rows}")
    return manifest


def _parquet_files(frame_dir: Path) -> list[Path]:
    return sorted(p for p in frame_dir.iterdir() if p.suffix == ".parquet" and not p.name.startswith((".", "_")))
