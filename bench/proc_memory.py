"""Resident memory of processes from /proc: the daemon and its Spark JVM, for the benchmarks."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (its children, theirs, ...), from /proc."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited while listed
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], list(children.get(pid, []))
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


def rss_mib(pids: Iterable[int]) -> float:
    """The summed resident memory (VmRSS) of `pids` in MiB; a process that has exited counts 0."""
    total = 0
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        total += next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
    return round(total / 1024, 1)
