"""The sample store's layout on disk and its commit log: the one definition the writer and the reader share.

    <root>/<table>/date=YYYY-MM-DD/hour=HH/<cycle>-<id>.parquet     one file per table per collection cycle
    <root>/<table>/date=YYYY-MM-DD/hour=HH/.<cycle>-<id>.parquet.tmp a write in flight (or a crash)
    <root>/_commits/date=YYYY-MM-DD/hour=HH/<cycle>-<id>.json       one marker per committed cycle
    <root>/_commits/date=YYYY-MM-DD/hour=HH/.<cycle>-<id>.json.tmp  a marker being written
    <root>/_quarantine/...                                          files recovery moved aside

Partitions are UTC hours. A collection cycle writes every table's file first and its commit
marker last, so a reader that folds cycles by their markers never sees half of one. Names
starting with "." or "_" are never data: Spark and the store reader skip them, which keeps the
markers and the quarantine out of every table read.

The writer (daemon/store) imports this module without a JVM: stdlib only, never pyspark.
"""

from __future__ import annotations

import json
import logging
import os
import re
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

log = logging.getLogger(__name__)

QUARANTINE = "_quarantine"
COMMITS = "_commits"
HOUR = timedelta(hours=1)
DATE_NAME = re.compile(r"^date=(\d{4}-\d{2}-\d{2})$")
HOUR_NAME = re.compile(r"^hour=(\d{2})$")
DATA_SUFFIX = ".parquet"
COMMIT_SUFFIX = ".json"
_STAMP = "%Y%m%dT%H%M%S%f"  # cycle files and markers start with their ts in this form: names sort by time
_STAMP_LEN = len("20261122T120000000000")


def as_utc(moment: datetime) -> datetime:
    """`moment` in UTC; a naive datetime is taken to be UTC already."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def hour_floor(moment: datetime) -> datetime:
    """The start of the UTC hour holding `moment`."""
    return as_utc(moment).replace(minute=0, second=0, microsecond=0)


def hours_between(start: datetime, end: datetime) -> Iterator[datetime]:
    """The start of every UTC hour overlapping [start, end], oldest first."""
    hour, last = hour_floor(start), as_utc(end)
    while hour <= last:
        yield hour
        hour += HOUR


def hour_dir(base: Path, moment: datetime) -> Path:
    """`<base>/date=YYYY-MM-DD/hour=HH` of the UTC hour holding `moment`."""
    moment = as_utc(moment)
    return base / f"date={moment:%Y-%m-%d}" / f"hour={moment:%H}"


def partition_dir(root: Path, table: str, ts: datetime) -> Path:
    """Where the rows of `table` taken at `ts` live: <root>/<table>/date=…/hour=…."""
    return hour_dir(Path(root) / table, ts)


def partition_start(date_name: str, hour_name: str) -> datetime | None:
    """The UTC start of the partition named `date=…`/`hour=…`; None for any other names."""
    day, hour = DATE_NAME.match(date_name), HOUR_NAME.match(hour_name)
    if day is None or hour is None:
        return None
    return datetime.strptime(day.group(1), "%Y-%m-%d").replace(tzinfo=UTC) + timedelta(hours=int(hour.group(1)))


def cycle_name(ts: datetime, suffix: str) -> str:
    """A fresh file name for what a cycle at `ts` writes: its time first, so names sort by time."""
    return f"{as_utc(ts):{_STAMP}}-{uuid.uuid4().hex[:8]}{suffix}"


def is_data_file(path: Path) -> bool:
    """A finished Parquet file: what Spark reads."""
    return path.suffix == DATA_SUFFIX and not path.name.startswith((".", "_")) and path.is_file()


def data_files(directory: str | Path) -> list[Path]:
    """The finished Parquet files of one partition directory, by name (oldest cycle first); [] if it is gone."""
    try:
        with os.scandir(directory) as entries:
            # DirEntry.is_file() answers from the directory listing: no stat per file.
            return sorted(Path(e.path) for e in entries if e.name.endswith(DATA_SUFFIX)
                          and not e.name.startswith((".", "_")) and e.is_file())
    except (FileNotFoundError, NotADirectoryError):
        return []


def date_dirs(root: Path, table: str) -> Iterator[Path]:
    """The `date=` directories of one table (or of COMMITS), oldest first."""
    base = Path(root) / table
    if not base.is_dir():
        return
    for entry in sorted(base.iterdir()):
        if entry.is_dir() and DATE_NAME.match(entry.name):
            yield entry


def hour_dirs(root: Path, table: str) -> list[tuple[datetime, Path]]:
    """Every `hour=` directory of one table (or of COMMITS) with its UTC start, oldest first."""
    found: list[tuple[datetime, Path]] = []
    for day in date_dirs(root, table):
        for entry in day.iterdir():
            start = partition_start(day.name, entry.name)
            if start is not None and entry.is_dir():
                found.append((start, entry))
    found.sort()
    return found


def partitions_between(root: str | Path, table: str, start: datetime, end: datetime) -> list[Path]:
    """Existing hour directories of `table` overlapping [start, end] that hold Parquet files."""
    base = Path(root) / table
    # Walking the hours of the window touches only the directories it needs; listing the whole
    # table would cost a stat per hour of retention on every cycle.
    return [d for d in (hour_dir(base, h) for h in hours_between(start, end)) if data_files(d)]


@dataclass(frozen=True)
class Commit:
    """One committed collection cycle: its marker's name, ts, clusters, and per table its files and rows."""

    name: str
    ts: datetime
    clusters: tuple[str, ...]
    files: dict[str, tuple[str, ...]]  # table -> file paths relative to the store root ("/"-separated)
    rows: dict[str, int]

    def __hash__(self) -> int:
        # The name is unique per marker, and equal commits have equal names: commits go in sets.
        return hash(self.name)


def commit_dir(root: Path, ts: datetime) -> Path:
    """The directory of the markers of cycles taken in the UTC hour of `ts`."""
    return hour_dir(Path(root) / COMMITS, ts)


def _relative(root: Path, path: Path) -> str:
    # Lexical, like the paths the writer builds from the same root: no symlink resolution.
    rel = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
    if rel.startswith(".."):
        raise ValueError(f"{path} is not under the store root {root}")
    return Path(rel).as_posix()


def write_commit(root: str | Path, ts: datetime, files_by_table: Mapping[str, Sequence[Path]],
                 rows_by_table: Mapping[str, int], clusters: Iterable[str]) -> Commit:
    """Write the marker of one cycle whose data files are all in place already; returns it.

    The marker is written under a "." temp name and renamed, so a reader lists either the whole
    marker or none: a cycle is committed at the rename.
    """
    root = Path(root)
    ts = as_utc(ts)
    name = cycle_name(ts, "")
    commit = Commit(
        name=name, ts=ts, clusters=tuple(sorted(set(clusters))),
        files={table: tuple(_relative(root, Path(p)) for p in paths) for table, paths in files_by_table.items()},
        rows={table: int(n) for table, n in rows_by_table.items()},
    )
    body = {"format": 1, "ts": ts.isoformat(), "clusters": list(commit.clusters),
            "files": {t: list(p) for t, p in commit.files.items()}, "rows": commit.rows}
    directory = commit_dir(root, ts)
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / f".{name}{COMMIT_SUFFIX}.tmp"
    tmp.write_text(json.dumps(body, sort_keys=True))
    os.replace(tmp, directory / f"{name}{COMMIT_SUFFIX}")
    return commit


def read_commit(path: Path) -> Commit:
    """The commit a marker file holds; ValueError when it is not a marker."""
    try:
        body = json.loads(Path(path).read_text())
        return Commit(
            name=Path(path).name[:-len(COMMIT_SUFFIX)],
            ts=as_utc(datetime.fromisoformat(body["ts"])),
            clusters=tuple(body["clusters"]),
            files={t: tuple(p) for t, p in body["files"].items()},
            rows={t: int(n) for t, n in body["rows"].items()},
        )
    except (KeyError, TypeError, AttributeError, ValueError) as exc:  # ValueError: bad JSON or ts
        raise ValueError(f"{path}: not a commit marker: {exc}") from exc


def is_commit_name(name: str) -> bool:
    """A finished marker's file name (not a temp file)."""
    return name.endswith(COMMIT_SUFFIX) and not name.startswith((".", "_"))


def _name_ts(name: str) -> datetime | None:
    try:
        return datetime.strptime(name[:_STAMP_LEN], _STAMP).replace(tzinfo=UTC)
    except ValueError:
        return None


class CommitLog:
    """The committed cycles of one store, listed by time range; parsed markers are cached (they never change)."""

    def __init__(self, root: str | Path, cache_max: int = 50_000) -> None:
        self.root = Path(root)
        self.cache_max = cache_max
        # path -> its commit, or None for a marker that does not parse (warned about once). A day of
        # 30 s cycles is 2,880 markers per cluster: the bound holds several days of a few clusters.
        self._parsed: dict[str, Commit | None] = {}

    def between(self, start: datetime, end: datetime) -> list[Commit]:
        """Commits with start <= ts <= end, by (ts, name); lists only the hour directories of that range."""
        low, high = as_utc(start), as_utc(end)
        found: list[Commit] = []
        for hour in hours_between(low, high):
            directory = commit_dir(self.root, hour)
            try:
                with os.scandir(directory) as entries:
                    names = [e.name for e in entries if is_commit_name(e.name)]
            except FileNotFoundError:
                continue
            for name in names:
                stamp = _name_ts(name)
                if stamp is not None and not low <= stamp <= high:
                    continue  # the name carries the ts: no need to open a marker outside the range
                commit = self._load(directory / name)
                if commit is not None and low <= commit.ts <= high:
                    found.append(commit)
        found.sort(key=lambda c: (c.ts, c.name))
        return found

    def _load(self, path: Path) -> Commit | None:
        key = str(path)
        if key in self._parsed:
            return self._parsed[key]
        try:
            commit: Commit | None = read_commit(path)
        except FileNotFoundError:
            return None  # dropped by retention since it was listed
        except (OSError, ValueError) as exc:
            # Only a power cut can leave a broken marker (it is renamed into place whole); its cycle
            # is then never folded; the reference path (read_window) still reads its files.
            log.warning("store commit log: %s is unreadable, its cycle is skipped: %s", path, exc)
            commit = None
        if len(self._parsed) >= self.cache_max:
            del self._parsed[next(iter(self._parsed))]  # the oldest entry: markers are read in time order
        self._parsed[key] = commit
        return commit


def list_commits(root: str | Path, start: datetime, end: datetime) -> list[Commit]:
    """Commits of the store at `root` with start <= ts <= end, by (ts, name) (uncached: see CommitLog)."""
    return CommitLog(root).between(start, end)


def committed_file_sets(root: str | Path, commit: Commit, table: str) -> tuple[list[Path], list[Path]]:
    """The commit's files of `table` still in place, and the data files of the hours whose listed file
    is gone (compaction replaced the hour's files by one file: it holds the commit's rows among others)."""
    root = Path(root)
    own: list[Path] = []
    gone_from: dict[Path, None] = {}
    for rel in commit.files.get(table, ()):
        path = root / rel
        if path.is_file():
            own.append(path)
        else:
            gone_from[path.parent] = None
    shared = [p for directory in gone_from for p in data_files(directory) if p not in own]
    return own, shared


def committed_files(root: str | Path, commit: Commit, table: str) -> list[Path]:
    """The files holding the commit's rows of `table`: its own when they still exist, else its hour's files."""
    own, shared = committed_file_sets(root, commit, table)
    return own + shared


def rows_by_table(commits: Iterable[Commit]) -> Counter[str]:
    """The rows each table holds in `commits` (0 for a table none of them wrote)."""
    rows: Counter[str] = Counter()
    for commit in commits:
        rows.update(commit.rows)
    return rows


def newest_committed(commits: Iterable[Commit]) -> dict[str, datetime]:
    """Per cluster, the newest ts among `commits`."""
    newest: dict[str, datetime] = {}
    for commit in commits:
        for cluster in commit.clusters:
            if cluster not in newest or commit.ts > newest[cluster]:
                newest[cluster] = commit.ts
    return newest
