"""Wiring of the long-running daemon: collect -> store -> evaluate -> track -> dispatch, on a schedule."""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from apscheduler.events import EVENT_JOB_MAX_INSTANCES, EVENT_JOB_MISSED, JobEvent
from apscheduler.schedulers.asyncio import AsyncIOScheduler

from config.models import ClusterConfig, RocketwatchConfig
from daemon.alerts.action_mirror import ActionMirror
from daemon.alerts.db import StateDB
from daemon.alerts.group_actions import GroupActionStore
from daemon.alerts.incidents import IncidentBook
from daemon.alerts.silences import SilenceStore
from daemon.alerts.tracker import AlertTracker
from daemon.alerts.value_history import ValueHistory
from daemon.app.after_collection import Collected, record_collection
from daemon.app.after_evaluation import (
    act_on_findings,
    record_evaluation,
    self_check_after_failure,
    tell_systemd,
)
from daemon.app.coordination import HaMetrics, coordination_for, incident_ids, share_actions, wire_ha
from daemon.app.cycles import CycleRecord, CycleStats
from daemon.app.http_view import HttpView
from daemon.app.jobs import EVALUATE
from daemon.app.lifecycle import StopWork, shutdown
from daemon.app.metrics import DaemonMetrics
from daemon.app.reloader import Candidate, NotifyState, ReloadOutcome, ReloadRejected, prepare
from daemon.app.rulebook import Rulebook, load_rulebook
from daemon.app.schedule import JobRuns, Schedule, utcnow
from daemon.app.selfmon import self_monitor
from daemon.app.statedir import StateDirLock
from daemon.app.watchdog import Watchdog, watchdog_interval
from daemon.collectors.logs import LogsCollector
from daemon.collectors.remoting.admin import AdminClient
from daemon.collectors.remoting.client import RemotingClient
from daemon.collectors.security import client_options
from daemon.collectors.sources import collect_sources
from daemon.common.judged_on import GroupBasis
from daemon.http.server import start_http
from daemon.notify.outbox import Outbox
from daemon.notify.slack_actions import SlackActionListener
from daemon.notify.wiring import build_routing, start_listener_tasks, start_slack_listeners
from daemon.store.maintenance import maintain_store, recover_store
from daemon.store.writer import ParquetStore
from rules.findings import Finding

log = logging.getLogger("rocketwatch")


class Daemon:
    """The rocketwatch process: owns the scheduler, the state and the warm Spark session."""

    def __init__(self, config: RocketwatchConfig, config_path: Path | None = None) -> None:
        self.config = config
        self.config_path = config_path
        self.stats = CycleStats()
        self.metrics = DaemonMetrics()
        self.ha_metrics = HaMetrics(self.metrics.registry)
        self.last_cycle_at: datetime | None = None
        # Kept in memory for the status page: the last cycles, and each cluster's last collector_health rows.
        self.cycles: deque[CycleRecord] = deque(maxlen=20)
        self.collector_health: dict[str, list[dict]] = {}
        self.judged_on: dict[str, list[GroupBasis]] = {}  # and what each group of it is judged on
        self.lock = StateDirLock(config.state_dir)
        self.store = ParquetStore(config.store)
        self.rulebook: Rulebook = load_rulebook(config, config_path)
        self.client = RemotingClient()
        self.admin = AdminClient(self.client)
        # Clusters with ACL or TLS get their own client: credentials and TLS are per connection.
        self.secure_clients: dict[str, AdminClient] = {}
        self.db: StateDB | None = None
        self.scheduler = AsyncIOScheduler(timezone="UTC")
        self.schedule = Schedule(self.scheduler, JobRuns(
            tracked=self._tracked, collect=self.collect_once, evaluate=self._evaluate_on_schedule,
            dispatch=self.dispatch_once, maintain=self.maintain_once,
            last_evaluation=lambda: self._evaluator.last_cycle if self._evaluator is not None else ""))
        self._evaluator = None
        self._http = None
        self._slack_listeners: list[SlackActionListener] = []
        self._slack_tasks: list[asyncio.Task] = []
        # Work a reload leaves to the loop (listeners reconnecting, clients closing): held so it is not collected.
        self._reload_tasks: set[asyncio.Task] = set()
        self._ready = False
        self._stopping = asyncio.Event()
        self._inflight: set[asyncio.Task] = set()
        self.log_collectors: dict[str, LogsCollector] = {}  # per cluster: file positions live across cycles
        # Compaction swaps hour directories: no Spark read may list them halfway.
        self._store_lock = asyncio.Lock()
        self.watchdog: Watchdog | None = None
        self.action_mirror: ActionMirror | None = None  # HA: silences and acknowledgements shared (run)

    # ---- lifecycle -------------------------------------------------------------------------

    async def run(self) -> None:
        """Run until SIGTERM/SIGINT; finish the cycle in flight, flush the outbox, return."""
        self.lock.acquire()
        try:
            self._open_state()
            await self.outbox.coordination.start()
            self.action_mirror = share_actions(self.config, self.db, self.silences, self.group_actions,
                                               self.outbox.coordination)
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self._stopping.set)
            loop.add_signal_handler(signal.SIGHUP, self.reload)
            log.info(
                "rocketwatch starting: %d cluster(s), %d rule(s), store %s, state %s",
                len(self.config.clusters), len(self.rulebook.rules), self.config.store, self.config.state_dir,
            )
            if self.config.http.enabled:
                self._http = await start_http(HttpView(self), self.config.http.listen)
                log.info("http: /metrics /healthz /readyz /api/alerts on %s", self.config.http.listen)
            await self._start_slack_listeners()
            await asyncio.to_thread(self._start_spark)
            # A crash may have left partial files that would fail every evaluation: out before the first.
            await asyncio.to_thread(recover_store, self.config.store)
            self._schedule()
            self.scheduler.start()
            watchdog = self._start_watchdog()
            await self._stopping.wait()
            await self._shutdown()
            if watchdog is not None:
                watchdog.cancel()
        finally:
            for listener in self._slack_listeners:
                await listener.stop()
            if self._http is not None:
                await self._http.cleanup()
            await self.client.close()
            for secure in self.secure_clients.values():
                await secure.client.close()
            if self.db is not None:
                if self.action_mirror is not None:
                    await self.action_mirror.stop()
                if getattr(self, "outbox", None) is not None:  # absent when the state failed to open
                    await self.outbox.coordination.stop()  # after the final flush: gives the lease up
                self.db.close()
            self.lock.release()
        log.info("rocketwatch stopped")

    def stop(self) -> None:
        """Ask the daemon to stop (as SIGTERM does)."""
        self._stopping.set()

    def _start_watchdog(self) -> asyncio.Task | None:
        interval = watchdog_interval()
        if interval is None:
            return None
        stall = self.config.watchdog_stall_after.total_seconds()
        self.watchdog = Watchdog(interval, stall)
        log.info("systemd watchdog: WATCHDOG=1 every %.1fs while a cycle completes at least every %.0fs",
                 interval, stall)
        return asyncio.get_running_loop().create_task(self.watchdog.run(), name="watchdog")

    async def _shutdown(self) -> None:
        await shutdown(StopWork(
            budget_s=self.config.daemon.shutdown_timeout.total_seconds(), scheduler=self.scheduler,
            reload_tasks=self._reload_tasks, inflight=self._inflight,
            flush_outbox=lambda: self.dispatch_once(final=True), outbox_depth=self.outbox.depth,
            spark_started=self._evaluator is not None, store_lock=self._store_lock,
            spark_stopped=lambda: self.metrics.spark_up.set(0),
            save_state=self._evaluator.save if self._evaluator is not None else None))

    @property
    def ready(self) -> bool:
        """True once the first collection cycle has finished (sd_notify READY=1 went out)."""
        return self._ready

    async def _tracked(self, job: Callable[..., Awaitable[None]], *args: object) -> None:
        # Every scheduled run registers itself so shutdown can wait for the one in flight.
        if self._stopping.is_set():
            return  # fired just as shutdown began: nothing new starts (Spark may be stopping under it)
        # The run is its own task, shielded: APScheduler cancels its executor's futures on shutdown,
        # which would abandon an evaluation thread still building a plan while Spark is stopped.
        task = asyncio.get_running_loop().create_task(job(*args), name=getattr(job, "__name__", "cycle"))
        self._inflight.add(task)
        task.add_done_callback(self._inflight.discard)
        await asyncio.shield(task)

    def _open_state(self) -> None:
        self.db = StateDB(self.config.state_dir / "state.db")
        self.tracker = AlertTracker(self.db)
        self.outbox = Outbox(self.db, jitter=0.2, coordination=coordination_for(self.config))
        wire_ha(self.outbox, self.config, lambda: self.last_cycle_at)
        self.silences = SilenceStore(self.db)
        self.group_actions = GroupActionStore(self.db)
        self.value_history = ValueHistory(self.db)
        self.incidents = IncidentBook(self.db, lambda: self.rulebook.links, incident_ids(self.outbox))
        self.selfmon = self_monitor(self.store, self.outbox, self.config)
        self._build_routing()

    def _build_routing(self) -> None:
        self.notifiers, self.dispatcher = build_routing(
            self.config.notify, self.outbox, self.silences, self.group_actions, self.value_history,
            rules=self.rule_named, incidents=self.incidents, external_url=self.config.external_url,
        )

    def rule_named(self, alert: str) -> object | None:
        """The running rule of that alert name; looked up at each call, so notifiers follow reloads."""
        return next((rule for rule in self.rulebook.rules if rule.alert == alert), None)

    async def _start_slack_listeners(self) -> None:
        self._slack_listeners, self._slack_tasks = start_slack_listeners(
            self.config.notify.receivers, self.notifiers, self.silences, self.group_actions
        )

    def _start_spark(self) -> None:
        # Imported here so `rocketwatch check` and the CLI never pay for a JVM.
        from daemon.diagnose.warmup import daemon_session_conf
        from spark.evaluate import Evaluator
        from spark.saved_state import state_directory
        from spark.session import get_session

        started = time.monotonic()
        where = self.config.spark
        session = get_session(where.master, daemon_session_conf(where.master, where.conf), self.config.state_dir / "spark.log")
        self._evaluator = Evaluator(session, str(self.config.store), saved_state=state_directory(self.config.store))
        self.metrics.spark_up.set(1)
        log.info("spark session ready in %.1fs (master %s)", time.monotonic() - started, self.config.spark.master)

    def _on_skipped(self, event: JobEvent) -> None:
        # A run skipped because the previous one still runs: the cycle overran its interval.
        self.metrics.cycles_skipped.labels(event.job_id).inc()
        log.warning("job %s: previous run still in progress, this run skipped (cycle longer than its interval)",
                    event.job_id)

    def scheduled_now(self, job_id: str) -> datetime:
        """The time the running `job_id` was scheduled for (daemon/app/jobs.py `run_slot`), or utcnow()."""
        return self.schedule.scheduled_now(job_id)

    def _schedule(self) -> None:
        self.scheduler.add_listener(self._on_skipped, EVENT_JOB_MAX_INSTANCES | EVENT_JOB_MISSED)
        self.schedule.start(self.config)

    # ---- reload ----------------------------------------------------------------------------

    def reload(self) -> ReloadOutcome:
        """SIGHUP or POST /-/reload: build the whole new config; swap it in only if every part is valid."""
        if self.config_path is None:
            log.warning("reload asked but the daemon was started without a config file")
            return ReloadOutcome(False, "started without a config file: nothing to reload")
        try:
            candidate = prepare(
                self.config_path, self.config, self.rulebook, self.notifiers,
                NotifyState(self.outbox, self.silences, self.group_actions, self.value_history, self.rule_named,
                            self.incidents),
            )
        except ReloadRejected as exc:
            log.error("reload rejected, keeping the running config and rules:\n%s", exc)
            return ReloadOutcome(False, str(exc))
        self._swap(candidate)
        lines = candidate.changes.lines()
        message = f"reloaded {self.config_path}: " + ("\n".join(["", *lines]) if lines else "nothing changed")
        log.info(message)
        return ReloadOutcome(True, message, candidate.changes.to_json())

    def _swap(self, new: Candidate) -> None:
        # No await from here to the end: no cycle ever sees half the old configuration and half the new.
        old = self.config
        self.config, self.rulebook = new.config, new.rulebook
        self.notifiers, self.dispatcher = new.notifiers, new.dispatcher
        self.metrics.rules.set(len(new.rulebook.rules))
        self.selfmon.evaluate_interval = new.config.evaluate.interval
        if self.watchdog is not None:
            self.watchdog.stall_after = new.config.watchdog_stall_after.total_seconds()
        self._follow_clusters(old, new.config)
        self.schedule.reschedule(old, new.config)
        if new.listeners is not None:
            self._replace_listeners(new.listeners)

    def _follow_clusters(self, old: RocketwatchConfig, new: RocketwatchConfig) -> None:
        # What a cluster's collection keeps between cycles goes with the cluster, or with the setting it follows.
        kept = {c.name: c for c in new.clusters}
        for cluster in old.clusters:
            now = kept.get(cluster.name)
            if now is None:
                self.collector_health.pop(cluster.name, None)
                self.judged_on.pop(cluster.name, None)
                self.stats.failed_calls.pop(cluster.name, None)
            if now is None or now.logs != cluster.logs:
                self.log_collectors.pop(cluster.name, None)  # new files are followed from their end, as at start
            if now is None or now.security != cluster.security:
                secure = self.secure_clients.pop(cluster.name, None)
                if secure is not None:
                    self._in_background(secure.client.close(), f"close:{cluster.name}")

    def _replace_listeners(self, listeners: list[SlackActionListener]) -> None:
        old, self._slack_listeners = self._slack_listeners, listeners
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop, so none was ever connected
        self._in_background(self._reconnect_listeners(old, listeners), "slack-actions:reload")

    async def _reconnect_listeners(self, old: list[SlackActionListener], new: list[SlackActionListener]) -> None:
        for listener in old:
            await listener.stop()
        self._slack_tasks = start_listener_tasks(new)

    def _in_background(self, work: Coroutine[Any, Any, None], name: str) -> None:
        try:
            task = asyncio.get_running_loop().create_task(work, name=name)
        except RuntimeError:
            work.close()  # no loop: nothing was ever opened on one
            return
        self._reload_tasks.add(task)
        task.add_done_callback(self._reload_tasks.discard)

    # ---- jobs ------------------------------------------------------------------------------

    async def collect_once(self, cluster: ClusterConfig) -> None:
        """One collection cycle of one cluster, written to the store as one file per table."""
        now = utcnow()
        started = time.monotonic()
        logs = self.log_collectors.get(cluster.name)
        if logs is None and cluster.logs:
            logs = self.log_collectors[cluster.name] = LogsCollector(cluster.name, cluster.logs)
        admin = self.admin
        if cluster.security is not None:
            if cluster.name not in self.secure_clients:
                self.secure_clients[cluster.name] = AdminClient(RemotingClient(**client_options(cluster.security)))
            admin = self.secure_clients[cluster.name]
        result = await collect_sources(admin, cluster, self.config.collect, now, logs)
        written = await asyncio.to_thread(self.store.append_all, result.rows, now)
        record_collection(self, Collected(cluster.name, now, time.monotonic() - started, result.rows, written,
                                          result.failed_calls))

    async def _evaluate_on_schedule(self) -> None:
        # Read as the run starts: APScheduler has just moved the job's next run one interval on.
        await self.evaluate_once(self.scheduled_now(EVALUATE))

    async def evaluate_once(self, at: datetime | None = None) -> None:
        """Evaluate every rule on the store at `at` (its scheduled slot; now when run by hand), advance
        alert states, queue notifications."""
        if self._evaluator is None:
            return
        now = at or utcnow()
        started = time.monotonic()
        rulebook = self.rulebook
        await asyncio.to_thread(self.selfmon.record, now, self.last_cycle_at)
        try:
            findings = await self._evaluate(rulebook.rules, now)
        except Exception:
            # Spark failing must not kill the daemon: the next cycle tries again, /readyz tells.
            self.metrics.evaluation_failures.inc()
            self.selfmon.evaluation_failed()
            log.exception("evaluation failed; alert states kept as they were, retrying next cycle")
            await self_check_after_failure(self, rulebook, self._evaluate)
            if self.watchdog is not None:
                self.watchdog.progress()  # failing is not hanging: the self-monitoring alert says why
            return
        findings = await act_on_findings(self, rulebook.timings, findings, now)
        record_evaluation(self, findings, now, time.monotonic() - started)
        await self.dispatch_once()
        self._ready = tell_systemd(self, findings, ready=self._ready)

    async def _evaluate(self, rules: Sequence[Any], now: datetime) -> list[Finding]:
        async with self._store_lock:
            return await asyncio.to_thread(self._evaluator.evaluate, rules, now, self.config.stale_after)

    async def maintain_once(self) -> None:
        """Store upkeep: crash recovery, compaction of closed hours, retention (DESIGN §6)."""
        try:
            async with self._store_lock:
                report = await asyncio.to_thread(maintain_store, self.config.store, utcnow(), self.config.maintenance)
        except Exception:
            # Maintenance failing costs disk, not alerts: keep running and say so.
            log.exception("store maintenance of %s failed; retrying at the next run", self.config.store)
            return
        self.metrics.store_bytes.set(report.store_bytes)
        self.metrics.store_moved_aside.inc(len(report.moved_aside))

    def refresh_gauges(self) -> None:
        """Gauges read at scrape time rather than per cycle."""
        if self.db is not None:
            self.metrics.outbox_depth.set(self.outbox.depth())
            self.ha_metrics.observe(self.outbox)
        self.metrics.rules.set(len(self.rulebook.rules))

    async def dispatch_once(self, final: bool = False) -> None:
        """Deliver what the outbox holds that is due, retrying earlier failures (all of them when final)."""
        report = await self.outbox.deliver_due(self.notifiers, utcnow(), ignore_backoff=final)
        self.metrics.notifications.labels("delivered").inc(report.delivered)
        self.metrics.notifications.labels("failed").inc(report.failed)
        self.metrics.outbox_depth.set(self.outbox.depth())
        if report.failed:
            log.warning("notifications: %s", report)
