"""Which broker (and cluster) the files given to `analyze` belong to, read from the files themselves.

A broker writes its configuration at start into broker.log (`brokerName=broker-a`,
`brokerClusterName=DefaultCluster`), and registers its own name and its cluster's name as topics
in its store's config/topics.json: the broker-name topic has 1 queue and the inherit permission
(bit 1), the cluster has a `<cluster>_REPLY_TOPIC` beside its own topic (ref §5.1).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from daemon.collectors.logparse.lines import open_text
from daemon.collectors.remoting.fastjson import FastjsonError, loads

# With isolateLogEnable a broker's logs live under <brokerName>_<brokerId>/ (ref §5.4).
_ISOLATED = re.compile(r"^(?P<broker>.+)_(?P<id>\d+)$")
_CONFIG_LINE = re.compile(r" - (?P<key>brokerName|brokerClusterName)=(?P<value>\S+)\s*$")
_START_LINES = 400  # the configuration is printed in the first few hundred lines after a start
_PERM_INHERIT = 1
_REPLY = "_REPLY_TOPIC"
_SYSTEM = re.compile(r"^(?:%RETRY%|%DLQ%|rmq_sys_|RMQ_SYS_|CID_RMQ_SYS_)|^(?:TBW102|SCHEDULE_TOPIC_XXXX|SELF_TEST_TOPIC|"
                     r"OFFSET_MOVED_EVENT|BenchmarkTest|TRANS_CHECK_MAX_TIME_TOPIC|CHECKPOINT_TOPIC)$")


@dataclass(frozen=True)
class Identity:
    """A broker's name and cluster as far as one file tells them (None: it does not say)."""

    broker: str | None = None
    cluster: str | None = None


def from_broker_log(path: Path) -> Identity:
    """The names a broker.log prints at start; an empty Identity when the file has no start."""
    found: dict[str, str] = {}
    try:
        for i, line in enumerate(open_text(path)):
            if i >= _START_LINES:
                break
            if (match := _CONFIG_LINE.search(line)) is not None:
                found.setdefault(match["key"], match["value"])
    except (OSError, EOFError):
        pass  # a cut file still names what it printed before the cut
    return Identity(found.get("brokerName"), found.get("brokerClusterName"))


def from_store(root: Path) -> Identity:
    """The names a store's config/topics.json holds; an empty Identity when it is missing or unclear."""
    table = _topics(root)
    if not table:
        return Identity()
    clusters = [name[:-len(_REPLY)] for name in table if name.endswith(_REPLY) and name[:-len(_REPLY)] in table]
    cluster = clusters[0] if len(clusters) == 1 else None
    brokers = [name for name, conf in table.items()
               if name != cluster and not name.endswith(_REPLY) and not _SYSTEM.search(name)
               and isinstance(conf, dict) and int(conf.get("perm", 0)) & _PERM_INHERIT
               and int(conf.get("readQueueNums", 0)) == 1 and int(conf.get("writeQueueNums", 0)) == 1]
    return Identity(brokers[0] if len(brokers) == 1 else None, cluster)


def _topics(root: Path) -> dict[str, object]:
    for name in ("topics.json", "topics.json.bak"):
        path = root / "config" / name
        if not path.exists():
            continue
        try:
            table = loads(path.read_bytes()).get("topicConfigTable")
        except (FastjsonError, AttributeError, OSError):
            continue
        if isinstance(table, dict):
            return {str(k): v for k, v in table.items()}
    return {}


@dataclass
class Names:
    """The broker name each broker-side file and store gets, and the cluster of every row."""

    cluster: str
    cluster_told: bool  # False: neither the user nor any file named it
    by_path: dict[Path, str | None]  # broker-side log or store dir -> its broker (None: nothing tells)

    @property
    def brokers(self) -> list[str]:
        """Every broker name the broker-side inputs were given, sorted."""
        return sorted({name for name in self.by_path.values() if name})


def resolve(stores: list[Path], broker_logs: list[Path], broker: str | None, cluster: str | None) -> Names:
    """Names from the user first, then each file's own, then its directory's, then the only one named."""
    own: dict[Path, Identity] = {root: from_store(root) for root in stores}
    own |= {path: from_broker_log(path) for path in broker_logs}
    named = {i.broker for i in own.values() if i.broker}
    clusters = {i.cluster for i in own.values() if i.cluster}
    by_dir = {path.parent: i.broker for path, i in own.items() if i.broker and path in broker_logs}
    by_path: dict[Path, str | None] = {}
    for path, found in own.items():
        isolated = _ISOLATED.match(path.parent.name) if path in broker_logs else None
        by_path[path] = (broker or (isolated["broker"] if isolated else None) or found.broker
                         or by_dir.get(path.parent) or (next(iter(named)) if len(named) == 1 else None))
    told = cluster or (next(iter(clusters)) if len(clusters) == 1 else None)
    return Names(told or "offline", told is not None, by_path)
