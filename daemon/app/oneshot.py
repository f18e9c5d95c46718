"""`rocketwatch collect --once`: one collection cycle written to a store, for a first look at a cluster."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from config.name_filter import Selection
from config.native_metrics import NativeMetricsConfig
from daemon.collectors.cluster import CollectResult, collect_cluster
from daemon.collectors.native_metrics import collect_native
from daemon.collectors.remoting.admin import AdminClient
from daemon.collectors.remoting.client import RemotingClient
from daemon.collectors.remoting.errors import RemotingError
from daemon.store.writer import ParquetStore


@dataclass(frozen=True)
class ClusterTarget:
    """A cluster to collect: its name and name servers."""

    name: str
    namesrv: list[str]
    selection: Selection | None = None
    native_metrics: NativeMetricsConfig = field(default_factory=NativeMetricsConfig)


async def discover_clusters(admin: AdminClient, namesrv: list[str], timeout: float,
                            native: NativeMetricsConfig | None = None) -> list[ClusterTarget]:
    """Every cluster the first answering name server knows; raises the last error if none answers."""
    error: RemotingError | None = None
    native = native or NativeMetricsConfig()
    for addr in namesrv:
        try:
            info = await admin.get_cluster_info(addr, timeout=timeout)
        except RemotingError as exc:
            error = exc
            continue
        return [ClusterTarget(name, namesrv, native_metrics=native) for name in sorted(info.clusters)]
    assert error is not None
    raise error


async def collect_once(
    store_path: Path,
    targets: list[ClusterTarget] | None,
    namesrv: list[str] | None = None,
    *,
    timeout: float = 5.0,
    concurrency: int = 8,
    native: NativeMetricsConfig | None = None,
) -> list[tuple[ClusterTarget, CollectResult, dict[str, int]]]:
    """Collect each target (or every cluster `namesrv` knows) once and append the rows to the store."""
    store = ParquetStore(store_path)
    async with RemotingClient(default_timeout=timeout) as client:
        admin = AdminClient(client)
        if targets is None:
            targets = await discover_clusters(admin, namesrv or [], timeout, native)
        results = []
        for target in targets:
            now = datetime.now(UTC)
            result = await collect_cluster(
                admin, target.name, target.namesrv, now, call_timeout=timeout, concurrency=concurrency,
                selection=target.selection,
            )
            result = _with_native(result, await collect_native(
                target.name, target.native_metrics, result.rows.get("broker", []), now))
            written = store.append_all(result.rows, now)
            results.append((target, result, written))
        return results


def _with_native(remoting: CollectResult, native: CollectResult) -> CollectResult:
    """The remoting cycle's result with the native pages' rows and health rows added."""
    rows = {table: list(found) for table, found in remoting.rows.items()}
    for table, found in native.rows.items():
        rows.setdefault(table, []).extend(found)
    return CollectResult(rows=rows, summary=f"{remoting.summary}\n{native.summary}", masters=remoting.masters,
                         groups=remoting.groups, online_groups=remoting.online_groups, clients=remoting.clients,
                         calls=remoting.calls + native.calls, failed_calls=remoting.failed_calls + native.failed_calls)
