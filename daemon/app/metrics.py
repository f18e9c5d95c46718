"""The daemon's own Prometheus metrics, in a registry of its own (not the process-global one)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

_CYCLE_BUCKETS = (0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)


class DaemonMetrics:
    """Everything /metrics reports: collection, evaluation, alerts, notifications, outbox, Spark."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.collect_seconds = Histogram(
            "rocketwatch_collect_duration_seconds", "Duration of one collection cycle of a cluster",
            ["cluster"], buckets=_CYCLE_BUCKETS, registry=r,
        )
        self.evaluate_seconds = Histogram(
            "rocketwatch_evaluate_duration_seconds", "Duration of one evaluation of every rule (Spark)",
            buckets=_CYCLE_BUCKETS, registry=r,
        )
        self.rows_collected = Counter(
            "rocketwatch_rows_collected", "Sample rows written to the store", ["cluster", "table"], registry=r
        )
        self.call_failures = Counter(
            "rocketwatch_collector_call_failures", "Collector calls that failed", ["cluster", "call"], registry=r
        )
        self.evaluation_failures = Counter(
            "rocketwatch_evaluation_failures", "Evaluations that raised instead of finishing", registry=r
        )
        self.findings = Gauge(
            "rocketwatch_findings", "Findings of the last evaluation", ["rule", "severity"], registry=r
        )
        self.alerts = Gauge("rocketwatch_alerts", "Active alert instances", ["state"], registry=r)
        self.incidents = Gauge(
            "rocketwatch_incidents", "Incidents (a cause and the alerts it explains) by cluster: open, or "
            "resolved within the last day", ["state", "cluster"], registry=r,
        )
        self.notifications = Counter(
            "rocketwatch_notifications", "Notification deliveries", ["result"], registry=r
        )
        self.notification_decisions = Counter(
            "rocketwatch_notification_decisions", "Per alert group and cycle: sent or held, and why", ["reason"],
            registry=r,
        )
        self.outbox_depth = Gauge("rocketwatch_outbox_depth", "Notifications not yet delivered", registry=r)
        self.cycles_skipped = Counter(
            "rocketwatch_cycles_skipped", "Runs skipped because the previous run of the job still ran",
            ["job"], registry=r,
        )
        self.last_cycle = Gauge(
            "rocketwatch_last_cycle_timestamp_seconds", "When the last evaluation cycle completed", registry=r
        )
        self.spark_up = Gauge("rocketwatch_spark_up", "1 when the Spark session is running", registry=r)
        self.rules = Gauge("rocketwatch_rules", "Rules loaded", registry=r)
        self.store_bytes = Gauge(
            "rocketwatch_store_bytes", "Size of the sample store's files, measured at each scrape", registry=r
        )
        self.store_moved_aside = Counter(
            "rocketwatch_store_files_moved_aside", "Partial or unreadable store files moved to _quarantine", registry=r
        )

    def observe_collect(self, cluster: str, seconds: float, written: Mapping[str, int], health: Iterable[Any]) -> None:
        """Record one collection cycle."""
        self.collect_seconds.labels(cluster).observe(seconds)
        for table, count in written.items():
            self.rows_collected.labels(cluster, table).inc(count)
        for row in health:
            if not row["ok"]:
                self.call_failures.labels(cluster, row["call"]).inc()

    def observe_findings(self, findings: Iterable[Any]) -> None:
        """Replace the findings gauge with the last evaluation's counts."""
        self.findings.clear()
        counts: dict[tuple[str, str], int] = {}
        for f in findings:
            key = (f.rule, f.severity or "no_data")
            counts[key] = counts.get(key, 0) + 1
        for (rule, severity), n in counts.items():
            self.findings.labels(rule, severity).set(n)

    def observe_alerts(self, alerts: Iterable[Any]) -> None:
        """Set the alerts-by-state gauge."""
        counts = {"pending": 0, "firing": 0}
        for a in alerts:
            counts[a.state] = counts.get(a.state, 0) + 1
        for state, n in counts.items():
            self.alerts.labels(state).set(n)

    def observe_incidents(self, incidents: Iterable[Any], clusters: Iterable[str] = ()) -> None:
        """Set the incidents gauge from the incident book: open and resolved ones per cluster (0 for a quiet one)."""
        self.incidents.clear()
        counts = {(state, cluster): 0 for cluster in clusters for state in ("open", "resolved")}
        for incident in incidents:
            key = ("open" if incident.resolved_at is None else "resolved", incident.locus.get("cluster", ""))
            counts[key] = counts.get(key, 0) + 1
        for (state, cluster), n in counts.items():
            self.incidents.labels(state, cluster).set(n)

    def exposition(self) -> bytes:
        """The text exposition format of every metric."""
        return generate_latest(self.registry)
