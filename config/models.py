"""The daemon's configuration file, as pydantic models (validated at the edge, typed inside)."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    field_validator,
    model_validator,
)

from config.durations import Duration
from config.ha import HaConfig
from config.matchers import parse_matcher
from config.name_filter import NameFilter, Selection, compile_pattern
from config.native_metrics import NativeMetricsConfig
from config.receivers import ReceiverConfig
from config.routing import HeartbeatConfig, RouteConfig, TimeIntervalConfig
from config.zones import iana_zone, zone_of
from rules.durations import Size
from rules.overrides import RuleOverride

_ADDR = re.compile(r"^[A-Za-z0-9_.\-\[\]:]+:\d{1,5}$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ExporterSource(_Strict):
    """A rocketmq-exporter already running for the cluster: its /metrics page is scraped each cycle."""

    url: str = Field(description="the exporter's page, e.g. http://10.0.0.5:5557/metrics (path defaults to /metrics)")
    timeout: Duration = Field(default=timedelta(seconds=10), description="for the whole scrape")

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"expected an http(s) URL such as http://10.0.0.5:5557/metrics, got {value!r}")
        # The exporter serves /metrics; an operator often pastes only scheme, host and port.
        return parts._replace(path=parts.path if parts.path not in ("", "/") else "/metrics").geturl()

    @field_validator("timeout")
    @classmethod
    def _positive(cls, value: timedelta) -> timedelta:
        if value.total_seconds() <= 0:
            raise ValueError("must be more than 0 s")
        return value


class LogSource(_Strict):
    """Log files of this cluster's brokers or clients to follow (tail -F) into log_event rows."""

    path: str = Field(min_length=1, description="a file or a glob, e.g. /var/log/rocketmq/*/store.log")
    kind: Literal["client", "store", "broker"] | None = Field(None, description="default: told from the content")
    tz: str | None = Field(None, description="zone of the timestamps; default GMT+8 (broker side), UTC (4.9 client)")
    broker: str | None = Field(None, description="broker name for store/broker logs; default from the directory")
    host: str | None = Field(None, description="host the files come from; default this host")

    @field_validator("tz")
    @classmethod
    def _zone(cls, value: str | None) -> str | None:
        if value is None:
            return value
        try:
            zone_of(value)  # ValueError with its own sentence for an unknown name
        except OSError:
            # zone_of lets a region folder (`Asia`) through as IsADirectoryError: say what it is.
            iana_zone(value.strip())
            raise ValueError(f"unknown time zone {value!r}") from None
        return value


class NamePatterns(_Strict):
    """Names to collect: globs, or regular expressions prefixed `re:`; empty include means all."""

    include: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)

    @field_validator("include", "exclude")
    @classmethod
    def _compiles(cls, value: list[str]) -> list[str]:
        for pattern in value:
            compile_pattern(pattern)  # ValueError names the pattern
        return value


class RemotingSecurity(_Strict):
    """ACL account and TLS for a cluster's name servers and brokers (ref §1.5)."""

    access_key: str | None = Field(None, description="ACL access key; the secret comes from secret_key_env")
    secret_key_env: str | None = Field(None, description="environment variable or systemd credential with the secret")
    tls: bool = Field(False, description="speak TLS (brokers with tlsMode permissive or enforcing)")
    tls_ca_file: Path | None = Field(None, description="CA bundle for the brokers' certificates; default system CAs")

    @model_validator(mode="after")
    def _secret_named(self) -> RemotingSecurity:
        if (self.access_key is None) != (self.secret_key_env is None):
            raise ValueError("give access_key and secret_key_env together (the secret is never written in the file)")
        return self


class ClusterConfig(_Strict):
    """One RocketMQ cluster to watch, through its name servers, a rocketmq-exporter, or both."""

    name: str = Field(description="name used in alerts; should match the brokers' clusterName")
    namesrv: list[str] = Field(
        default_factory=list, description="name server addresses, host:port; optional when exporter is given"
    )
    exporter: ExporterSource | None = Field(
        default=None, description="scrape this rocketmq-exporter; fills no process_queue (see README)"
    )
    logs: list[LogSource] = Field(default_factory=list, description="broker/client log files to follow")
    groups: NamePatterns = Field(default_factory=NamePatterns, description="consumer groups to collect")
    topics: NamePatterns = Field(default_factory=NamePatterns, description="normal topics to collect")
    system_names: bool = Field(False, description="also collect RocketMQ's own topics and groups (ref §5.1)")
    jstack_groups: list[str] = Field(default_factory=list, description="groups (patterns) whose clients send a jstack")
    security: RemotingSecurity | None = Field(None, description="ACL signing and TLS towards this cluster")
    native_metrics: NativeMetricsConfig = Field(default_factory=NativeMetricsConfig, description="5.1+ brokers' /metrics")

    def selection(self) -> Any:
        """The collector's Selection for this cluster's patterns."""
        return Selection(
            NameFilter.of(self.groups.include, self.groups.exclude),
            NameFilter.of(self.topics.include, self.topics.exclude),
            self.system_names,
            tuple(compile_pattern(p) for p in self.jstack_groups),
        )

    @model_validator(mode="after")
    def _a_source(self) -> ClusterConfig:
        if not self.namesrv and self.exporter is None and not self.logs:
            raise ValueError(
                f"cluster {self.name!r} needs a source: namesrv (host:port list), exporter (url) or logs"
            )
        return self

    @field_validator("namesrv", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        # Operators paste `a:9876;b:9876` as RocketMQ's own NAMESRV_ADDR is written.
        if isinstance(value, str):
            return [v.strip() for v in value.split(";") if v.strip()]
        return value

    @field_validator("namesrv")
    @classmethod
    def _addresses(cls, value: list[str]) -> list[str]:
        for addr in value:
            if not _ADDR.match(addr):
                raise ValueError(f"expected host:port such as 10.0.0.5:9876, got {addr!r}")
        return value


class CollectConfig(_Strict):
    """How often and how patiently the collectors ask the cluster."""

    interval: Duration = timedelta(seconds=30)
    timeout: Duration = Field(default=timedelta(seconds=5), description="per call")
    concurrency: int = Field(default=8, ge=1, le=256, description="calls in flight per cluster")
    per_broker: int = Field(default=4, ge=1, le=256, description="of those, calls in flight to one broker or name server")


class EvaluateConfig(_Strict):
    """How often rules run, and when a series counts as stale."""

    interval: Duration = timedelta(seconds=30)
    stale_after: Duration | None = Field(default=None, description="default: 2 x collect.interval")


class SparkConfig(_Strict):
    """Where the evaluation runs: embedded local mode unless told otherwise."""

    master: str = "local[2]"
    conf: dict[str, str] = Field(default_factory=dict)


class DaemonConfig(_Strict):
    """How the daemon stops and how systemd's watchdog judges it."""

    shutdown_timeout: Duration = Field(
        default=timedelta(seconds=25),
        description="on SIGTERM: the cycle in flight and the outbox flush get this long (keep < TimeoutStopSec)",
    )
    watchdog_stall_after: Duration | None = Field(
        default=None,
        description="no completed cycle for this long stops WATCHDOG=1; default 10 x the longest interval, "
        "at least 5m (Spark's start counts)",
    )


class MaintenanceConfig(_Strict):
    """The sample store's upkeep (job `maintain`): compaction of closed hours, retention, crash recovery."""

    interval: Duration = Field(default=timedelta(hours=1), description="how often the job runs (also once at start)")
    retention: Duration = Field(default=timedelta(days=7), description="hours older than this are dropped")
    max_size: Size | None = Field(
        default=None, description="e.g. 20GiB: the oldest hours are dropped while the store is larger"
    )
    compact_after: Duration = Field(
        default=timedelta(minutes=10), description="an hour is compacted this long after it ends (late cycles land first)"
    )


class InhibitRuleConfig(_Strict):
    """While an alert matching `source_matchers` fires, mute alerts matching `target_matchers` with equal labels."""

    source_matchers: list[str] = Field(min_length=1, description='e.g. [category="broker", severity="critical"]')
    target_matchers: list[str] = Field(min_length=1, description='e.g. [category="consumer"]')
    equal: list[str] = Field(default_factory=list, description="labels that must have the same value on both")

    @field_validator("source_matchers", "target_matchers")
    @classmethod
    def _matchers(cls, value: list[str]) -> list[str]:
        for text in value:
            parse_matcher(text)  # ValueError names the matcher and what a good one looks like
        return value


class NotifyConfig(_Strict):
    """Where alerts go and how they are grouped into messages."""

    group_by: list[str] = Field(
        default_factory=lambda: ["incident"],
        description="labels whose values make one notification group; `incident` (the default) is the reserved "
                    "label holding the alert's incident: a cause and everything it explains, as one page",
    )
    interval: Duration = Field(default=timedelta(seconds=10), description="outbox delivery and retry cadence")
    receivers: list[ReceiverConfig] = Field(default_factory=list)
    inhibit_rules: list[InhibitRuleConfig] = Field(
        default_factory=list,
        description="Alertmanager's inhibit rules. None by default: the rules' causal links put a broker-side "
                    "cause and the consumer-side alerts it explains in one incident instead of muting them",
    )

    route: RouteConfig | None = Field(
        default=None,
        description="the route tree (Alertmanager's shape); default: every alert to every receiver, grouped by group_by",
    )
    time_intervals: list[TimeIntervalConfig] = Field(default_factory=list, description="named windows for routes")
    heartbeat: HeartbeatConfig | None = Field(default=None, description="an always-firing alert to a dead man's switch")

    @model_validator(mode="after")
    def _unique_names(self) -> NotifyConfig:
        names = [r.name for r in self.receivers]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"receiver names must be unique; repeated: {', '.join(dupes)}")
        known, intervals = set(names), {t.name for t in self.time_intervals}
        for path, route in _walk(self.route, "route") if self.route is not None else ():
            if route.receiver is not None and route.receiver not in known:
                raise ValueError(f"{path}: receiver {route.receiver!r} is not among the receivers ({', '.join(names)})")
            for name in route.mute_time_intervals + route.active_time_intervals:
                if name not in intervals:
                    raise ValueError(f"{path}: time interval {name!r} is not defined under notify.time_intervals")
        if self.route is not None and self.route.receiver is None:
            raise ValueError("route: the root route needs a receiver (children inherit it)")
        if self.heartbeat is not None and self.heartbeat.receiver not in known:
            raise ValueError(f"heartbeat: receiver {self.heartbeat.receiver!r} is not among the receivers")
        return self


def _walk(route: RouteConfig, path: str) -> list[tuple[str, RouteConfig]]:
    found = [(path, route)]
    for i, child in enumerate(route.routes):
        found += _walk(child, f"{path}.routes[{i}]")
    return found


class HttpConfig(_Strict):
    """The daemon's HTTP endpoints (/metrics, /healthz, /readyz, /api/alerts, /-/reload)."""

    enabled: bool = True
    listen: str = Field(default="127.0.0.1:9787", description="host:port; localhost unless you mean it")
    token: SecretStr | None = Field(
        default=None, description="bearer token for writes (silences); without it only loopback clients may write"
    )

    @field_validator("listen")
    @classmethod
    def _address(cls, value: str) -> str:
        if not _ADDR.match(value):
            raise ValueError(f"expected host:port such as 127.0.0.1:9787, got {value!r}")
        return value


class RocketwatchConfig(_Strict):
    """The whole configuration file."""

    clusters: list[ClusterConfig] = Field(min_length=1)
    state_dir: Path = Field(default=Path("/var/lib/rocketwatch"), description="SQLite state and lock")
    store_path: Path | None = Field(default=None, description="Parquet sample store; default <state_dir>/store")
    collect: CollectConfig = Field(default_factory=CollectConfig)
    evaluate: EvaluateConfig = Field(default_factory=EvaluateConfig)
    spark: SparkConfig = Field(default_factory=SparkConfig)
    rules: list[str] = Field(default_factory=lambda: ["builtin"], description="rule files, dirs or 'builtin'")
    rule_overrides: dict[str, RuleOverride] = Field(default_factory=dict)
    notify: NotifyConfig = Field(default_factory=NotifyConfig)
    http: HttpConfig = Field(default_factory=HttpConfig)
    daemon: DaemonConfig = Field(default_factory=DaemonConfig)
    maintenance: MaintenanceConfig = Field(default_factory=MaintenanceConfig)
    ha: HaConfig | None = Field(default=None, description="two or three daemons, one notification (config/ha.py)")
    external_url: str = Field(
        default="", pattern=r"^(https?://\S+)?$",
        description="the address operators reach the status page at (as Prometheus's --web.external-url); every "
        "page then links <external_url>/incidents/<id> and the silence form; default none: no links")

    @model_validator(mode="after")
    def _unique_clusters(self) -> RocketwatchConfig:
        names = [c.name for c in self.clusters]
        if len(set(names)) != len(names):
            raise ValueError(f"cluster names must be unique: {names}")
        return self

    @property
    def store(self) -> Path:
        """Where the Parquet sample store lives."""
        return self.store_path or self.state_dir / "store"

    @property
    def watchdog_stall_after(self) -> timedelta:
        """No completed cycle for this long means the daemon is stuck."""
        longest = max(self.collect.interval, self.evaluate.interval)
        return self.daemon.watchdog_stall_after or max(timedelta(minutes=5), 10 * longest)

    @property
    def stale_after(self) -> timedelta:
        """Age after which a series is no_data rather than resolved."""
        return self.evaluate.stale_after or 2 * self.collect.interval
