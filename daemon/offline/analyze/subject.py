"""What a report is about, in words: the broker(s) and cluster the files name, the client logs, dumps
and running info read — never a cluster name nobody gave ("offline" is only the rows' placeholder)."""

from __future__ import annotations

from collections import Counter
from typing import Any, Protocol

BROKER_SIDE = ("broker log", "store log", "stats log")


class _Analysed(Protocol):
    cluster: str
    cluster_told: bool
    brokers: list[str]
    files: list[tuple[str, str, int]]
    events: list[dict[str, Any]]
    unnamed_broker_inputs: int


def what_was_analysed(report: _Analysed) -> str:
    """One line: `broker broker-a of cluster DefaultCluster (store directory, 3 broker-side logs); ...`."""
    kinds = Counter(what for _, what, _ in report.files)
    parts: list[str] = []
    broker_files = _plural(kinds["store directory"], "store directory", "store directories")
    broker_logs = sum(kinds[k] for k in BROKER_SIDE)
    broker_read = ", ".join(p for p in (broker_files, _plural(broker_logs, "broker-side log", "broker-side logs")) if p)
    if report.brokers:
        names = ", ".join(report.brokers)
        cluster = f" of cluster {report.cluster}" if report.cluster_told else ""
        parts.append(f"{'broker' if len(report.brokers) == 1 else 'brokers'} {names}{cluster} ({broker_read})")
        if report.unnamed_broker_inputs:
            parts.append(f"{report.unnamed_broker_inputs} broker-side input(s) no file names the broker of "
                         f"(give --broker)")
    elif broker_read:
        parts.append(f"a broker no file names ({broker_read}; give --broker)")
    groups = sorted({e["group"] for e in report.events if e["source"] == "client" and e["group"]})
    if kinds["client log"]:
        of = f" of {', '.join(groups)}" if groups else ""
        parts.append(f"{_plural(kinds['client log'], 'client log', 'client logs')}{of}")
    for what, one, many in (("thread dump", "thread dump", "thread dumps"),
                            ("mqadmin consumerStatus", "mqadmin consumerStatus output", "mqadmin consumerStatus outputs")):
        if kinds[what]:
            parts.append(_plural(kinds[what], one, many))
    if not report.brokers and report.cluster_told:
        parts.insert(0, f"cluster {report.cluster}")
    return "; ".join(parts) or "nothing readable"


def _plural(count: int, one: str, many: str) -> str:
    if count == 0:
        return ""
    return f"its {one}" if count == 1 and one == "store directory" else f"{count} {one if count == 1 else many}"
