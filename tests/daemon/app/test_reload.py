"""Reload = the whole config: rules, routes, receivers, intervals, stale_after and clusters change in the
running daemon, with no restart; a broken file changes nothing. The daemon runs in-process, its
scheduler started paused so the test runs each cycle itself, and reloads through POST /-/reload."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from config.loader import load_config
from daemon.app.daemon import Daemon
from daemon.app.http_view import HttpView
from daemon.http.server import start_http
from tests.helpers.slack_server import SlackServer

pytestmark = pytest.mark.timeout(240)

RULE = """\
groups:
  - name: mine
    rules:
      - alert: BigCache
        kind: threshold
        table: process_queue
        value: cached_msg_count
        above: {{warning: {limit}}}
        summary: "{{group}} caches {{value}}"
        diagnosis: "slow consumer"
        next_steps: "look at consumeRT"
"""

CONFIG = """\
clusters:
{clusters}
state_dir: {state}
rules: [{rules}]
collect: {{interval: {collect}}}
evaluate: {{interval: {evaluate}{stale_after}}}
maintenance: {{interval: 1h}}
spark: {{conf: {{spark.sql.shuffle.partitions: "{partitions}"}}}}
http: {{listen: "127.0.0.1:{port}"}}
notify:
  interval: {notify}
  receivers:
{receivers}
  route: {route}
  heartbeat: {{receiver: {heartbeat}}}
"""


def config_text(tmp_path: Path, **changes: str) -> str:
    """The test's config file: one cluster, console receivers team-a and team-b, every interval named."""
    fields = {
        "clusters": '  - {name: prod, namesrv: ["127.0.0.1:9876"]}', "state": str(tmp_path / "state"),
        "rules": str(tmp_path / "rules.yaml"), "collect": "30s", "evaluate": "30s", "stale_after": "",
        "partitions": "2", "port": "0", "notify": "10s",
        "receivers": "    - {type: console, name: team-a}\n    - {type: console, name: team-b}",
        "route": "{receiver: team-a}", "heartbeat": "team-a",
    }
    return CONFIG.format(**{**fields, **changes})


def make_daemon(tmp_path: Path, **changes: str) -> Daemon:
    """A daemon on the test's config file with its state open (as `run` opens it), no Spark yet."""
    (tmp_path / "rules.yaml").write_text(RULE.format(limit=500))
    path = tmp_path / "rocketwatch.yaml"
    path.write_text(config_text(tmp_path, **changes))
    daemon = Daemon(load_config(path), path)
    daemon._open_state()
    return daemon


@asynccontextmanager
async def running(daemon: Daemon) -> AsyncIterator[str]:
    """The daemon's jobs scheduled (paused: the test runs cycles itself) and its HTTP app; yields its URL."""
    daemon._schedule()
    daemon.scheduler.start(paused=True)
    runner = await start_http(HttpView(daemon), "127.0.0.1:0")
    host, port = runner.addresses[0][:2]
    try:
        yield f"http://{host}:{port}"
    finally:
        await runner.cleanup()
        daemon.scheduler.shutdown(wait=False)
        daemon.db.close()


async def reload(base: str) -> tuple[int, dict[str, Any]]:
    """POST /-/reload; the status and the JSON reply."""
    async with aiohttp.ClientSession() as http, http.post(f"{base}/-/reload") as r:
        return r.status, await r.json()


def schedule(daemon: Daemon) -> dict[str, tuple[timedelta | None, datetime]]:
    """Each job's interval (None for a run once) and next run, as the scheduler holds them."""
    return {job.id: (getattr(job.trigger, "interval", None), job.next_run_time) for job in daemon.scheduler.get_jobs()}


BROKEN = {
    "a YAML syntax error": (
        lambda tmp, cfg: cfg.write_text(config_text(tmp).replace("route: {receiver: team-a}", "route: {receiver: [")),
        lambda tmp: [f"{tmp / 'rocketwatch.yaml'}:17:1: YAML syntax: expected ',' or ']'"],
    ),
    "a heartbeat to a receiver that does not exist": (
        lambda tmp, cfg: cfg.write_text(config_text(tmp, heartbeat="nobody")),
        lambda tmp: [f"{tmp / 'rocketwatch.yaml'}:10:1: notify: heartbeat: receiver 'nobody' is not among the receivers"],
    ),
    "a rule reading a column that does not exist": (
        lambda tmp, cfg: (tmp / "rules.yaml").write_text(RULE.format(limit=900).replace("cached_msg_count",
                                                                                          "cached_msg_cnt")),
        lambda tmp: [f"{tmp / 'rules.yaml'}:7:16:", "cached_msg_cnt"],
    ),
    "a receiver whose secret is not set": (
        lambda tmp, cfg: cfg.write_text(config_text(tmp, receivers=(
            "    - {type: console, name: team-a}\n"
            "    - {type: slack, name: team-b, channel: '#b', token_env: ROCKETWATCH_RELOAD_TEST_UNSET}"))),
        lambda tmp: [f"{tmp / 'rocketwatch.yaml'}:14:7: notify.receivers.1:",
                     "environment variable ROCKETWATCH_RELOAD_TEST_UNSET is not set"],
    ),
}


@pytest.mark.parametrize("broken", list(BROKEN))
def test_a_broken_file_keeps_everything_as_it_was(tmp_path: Path, broken: str, caplog, monkeypatch) -> None:
    monkeypatch.delenv("ROCKETWATCH_RELOAD_TEST_UNSET", raising=False)
    daemon = make_daemon(tmp_path)
    config_path = tmp_path / "rocketwatch.yaml"
    breaks, positions = BROKEN[broken]

    async def scenario() -> None:
        async with running(daemon) as base:
            before = (daemon.config, daemon.rulebook, daemon.notifiers, daemon.dispatcher, daemon.tracker,
                      schedule(daemon))
            # The broken file also moves the heartbeat and every interval: none of that may happen.
            config_path.write_text(config_text(tmp_path, heartbeat="team-b", collect="5s", evaluate="5s"))
            breaks(tmp_path, config_path)
            status, body = await reload(base)
            assert status == 400 and body["reloaded"] is False and "changes" not in body
            for position in positions(tmp_path):
                assert position in body["message"]
            assert (daemon.config, daemon.rulebook, daemon.notifiers, daemon.dispatcher, daemon.tracker,
                    schedule(daemon)) == before
            assert daemon.config is before[0] and daemon.dispatcher is before[3]
            assert "reload rejected, keeping the running config and rules" in caplog.text
            assert positions(tmp_path)[-1] in caplog.text

            # Fixed: the same reload now goes through.
            (tmp_path / "rules.yaml").write_text(RULE.format(limit=500))
            config_path.write_text(config_text(tmp_path, heartbeat="team-b"))
            status, body = await reload(base)
            assert status == 200 and body["reloaded"] is True, body
            assert body["changes"]["routes"] == ["heartbeat: receiver team-a -> team-b"]
            assert daemon.config.notify.heartbeat.receiver == "team-b"

    asyncio.run(scenario())


def test_intervals_clusters_and_restart_settings_take_effect_in_the_running_scheduler(tmp_path: Path) -> None:
    two = '  - {name: prod, namesrv: ["127.0.0.1:9876"]}\n  - {name: qa, namesrv: ["127.0.0.1:9877"]}'
    daemon = make_daemon(tmp_path, clusters=two)
    config_path = tmp_path / "rocketwatch.yaml"

    async def scenario() -> None:
        async with running(daemon) as base:
            # The first evaluation runs once, half an interval after the first collections.
            first = schedule(daemon)
            assert first["evaluate"] == (None, first["collect:prod"][1] + timedelta(seconds=15))
            await daemon.schedule.run_first_evaluation()
            before = schedule(daemon)
            tracker, outbox = daemon.tracker, daemon.outbox
            assert set(before) == {"collect:prod", "collect:qa", "evaluate", "dispatch", "maintain"}
            # Then every interval, half an interval after the collections: each reads a finished
            # cycle and does not share the cores with the next collection.
            assert before["evaluate"] == (timedelta(seconds=30), first["evaluate"][1])
            config_path.write_text(config_text(
                tmp_path, collect="5s", evaluate="15s", notify="2s", partitions="8", port="9999",
                clusters='  - {name: prod, namesrv: ["127.0.0.1:9880"]}\n  - {name: stage, namesrv: ["127.0.0.1:9878"]}',
            ))
            asked = datetime.now(UTC)
            status, body = await reload(base)
            answered = datetime.now(UTC)
            assert status == 200 and body["reloaded"] is True, body

            # The reply says what changed and what waits for a restart.
            message = body["message"]
            assert ("intervals (rescheduled): collect:prod every 30s -> 5s; evaluate every 30s -> 15s; "
                    "dispatch every 10s -> 2s") in message
            assert "stale_after: 1m -> 10s" in message
            assert "clusters: added stage (collected from now on); removed qa (no longer collected); " \
                   "changed prod (namesrv)" in message
            assert ("needs a restart (the running value stays until then): http.listen 127.0.0.1:0 -> "
                    "127.0.0.1:9999; spark.conf (spark.sql.shuffle.partitions)") in message
            assert body["changes"]["restart_needed"] == [
                "http.listen 127.0.0.1:0 -> 127.0.0.1:9999", "spark.conf (spark.sql.shuffle.partitions)"]

            # The scheduler runs the new cadence, from the reload on; the untouched job kept its own.
            after = schedule(daemon)
            assert set(after) == {"collect:prod", "collect:stage", "evaluate", "dispatch", "maintain"}
            for job, seconds in (("collect:prod", 5), ("dispatch", 2), ("collect:stage", 5)):
                interval, next_run = after[job]
                assert interval == timedelta(seconds=seconds), job
                if job != "collect:stage":
                    assert asked + interval <= next_run <= answered + interval, job
            # Evaluations keep their place between collections at the new cadence.
            interval, next_run = after["evaluate"]
            assert interval == timedelta(seconds=15)
            assert next_run - after["collect:prod"][1] == interval / 2
            assert asked <= after["collect:stage"][1] <= answered  # a new cluster is collected at once
            assert after["maintain"] == before["maintain"]
            # The collect job carries the cluster's new addresses.
            (prod,) = [job.args[1] for job in daemon.scheduler.get_jobs() if job.id == "collect:prod"]
            assert prod.namesrv == ["127.0.0.1:9880"]

            # Applied in the daemon, restart-only settings kept at their running value, state kept.
            assert daemon.config.stale_after == timedelta(seconds=10)
            assert daemon.selfmon.evaluate_interval == timedelta(seconds=15)
            assert daemon.config.http.listen == "127.0.0.1:0"
            assert daemon.config.spark.conf == {"spark.sql.shuffle.partitions": "2"}
            assert daemon.tracker is tracker and daemon.outbox is outbox

            # Reloading the same file again changes nothing but still names the pending restart.
            status, body = await reload(base)
            assert status == 200 and body["changes"]["intervals"] == {} and body["changes"]["routes"] == []
            assert "needs a restart" in body["message"] and schedule(daemon) == after

    asyncio.run(scenario())


def test_a_reload_before_the_first_evaluation_sets_the_cadence_it_starts(tmp_path: Path) -> None:
    daemon = make_daemon(tmp_path)

    async def scenario() -> None:
        async with running(daemon) as base:
            first = schedule(daemon)["evaluate"]
            (tmp_path / "rocketwatch.yaml").write_text(config_text(tmp_path, evaluate="10s"))
            status, body = await reload(base)
            assert status == 200 and "evaluate every 30s -> 10s" in body["message"], body
            assert schedule(daemon)["evaluate"] == first  # the first evaluation keeps its time
            await daemon.schedule.run_first_evaluation()
            interval, next_run = schedule(daemon)["evaluate"]
            collected = schedule(daemon)["collect:prod"][1]
            assert interval == timedelta(seconds=10)
            assert (next_run - collected) % interval == interval / 2

    asyncio.run(scenario())


def test_changed_rules_are_listed_and_kept_notifiers_read_the_new_ones(tmp_path: Path) -> None:
    daemon = make_daemon(tmp_path)

    async def scenario() -> None:
        async with running(daemon) as base:
            console = daemon.notifiers["team-a"]
            (tmp_path / "rules.yaml").write_text(RULE.format(limit=900))
            status, body = await reload(base)
            assert status == 200 and body["changes"]["rules"] == {"added": [], "removed": [], "changed": ["BigCache"]}
            assert "rules: changed BigCache" in body["message"]
            assert "engine: kept state is rebuilt from the store at the next evaluation" in body["message"]
            # The receiver did not change, so its notifier is kept; the rule it renders with is the new one.
            assert daemon.notifiers["team-a"] is console
            assert console.rules("BigCache").above.warning.source == "900"

    asyncio.run(scenario())


def _posted(slack: SlackServer, alert: str = "") -> list[dict[str, Any]]:
    """Messages and thread replies a Slack stand-in received, those naming `alert` when given."""
    return [c.args for c in slack.calls_to("chat.postMessage") if alert in json.dumps(c.args)]


@pytest.mark.spark
def test_routes_receivers_and_stale_after_take_effect_at_the_next_evaluation(tmp_path: Path, spark: Any) -> None:
    # One Slack stand-in per receiver, so whatever one receives (message, update or reply) is that receiver's.
    with SlackServer(token="xoxb-test") as team_a, SlackServer(token="xoxb-test") as team_b:
        def receiver(name: str) -> str:
            server = team_a if name == "team-a" else team_b
            return (f"    - {{type: slack, name: {name}, channel: '#{name}', token: xoxb-test, "
                    f"base_url: '{server.base_url}'}}")

        daemon = make_daemon(tmp_path, receivers=receiver("team-a"))
        daemon._start_spark()  # the suite's one SparkSession: same master, so the daemon shares it
        # One sample 90 s old: stale with the default stale_after (2 x 30 s), fresh with 10 minutes.
        seen = datetime.now(UTC) - timedelta(seconds=90)
        daemon.store.append("process_queue", [{
            "ts": seen, "cluster": "prod", "group": "orders", "topic": "OrderTopic", "broker": "broker-a",
            "queue_id": 0, "client_id": "10.0.0.7@1", "cached_msg_count": 900, "cached_msg_size_mib": 1,
            "cached_min_offset": 0, "cached_max_offset": 900, "commit_offset": 0, "last_pull_ts": seen,
            "last_consume_ts": seen, "locked": False, "dropped": False, "try_unlock_times": 0,
            "pull_threshold_for_queue": 1000, "pull_threshold_size_mib": 100, "max_span": 2000,
            "consume_timeout_min": 15, "max_reconsume_times": 16, "orderly": False,
        }], seen)

        async def scenario() -> None:
            async with running(daemon) as base:
                await daemon.schedule.run_first_evaluation()
                assert len(_posted(team_a, "Heartbeat")) == 1
                assert [a.rule for a in daemon.tracker.active_alerts()] == ["Heartbeat"]  # BigCache is stale

                tracker, outbox = daemon.tracker, daemon.outbox
                (tmp_path / "rocketwatch.yaml").write_text(config_text(
                    tmp_path, receivers=f"{receiver('team-a')}\n{receiver('team-b')}", heartbeat="team-b, interval: 1s",
                    route="{receiver: team-a, routes: [{receiver: team-b, matchers: ['alertname=\"BigCache\"']}]}",
                    stale_after=", stale_after: 10m", evaluate="20s",
                ))
                status, body = await reload(base)
                assert status == 200 and body["reloaded"] is True, body
                assert body["changes"]["routes"] == [
                    'route.routes[0] added: alertname="BigCache" to team-b',
                    "heartbeat: receiver team-a -> team-b, repeat_interval 5m -> 1s"]
                assert body["changes"]["receivers"] == {"added": ["team-b"], "removed": [], "changed": []}
                assert body["changes"]["stale_after"] == {"from_s": 60.0, "to_s": 600.0}
                assert "intervals (rescheduled): evaluate every 30s -> 20s" in body["message"]
                assert daemon.scheduler.get_job("evaluate").trigger.interval == timedelta(seconds=20)
                assert daemon.notifiers["team-a"] is not None and "team-b" in daemon.notifiers

                # The next evaluation: BigCache, fresh under the new stale_after, fires to its new route.
                await daemon.evaluate_once()
                assert len(_posted(team_b, "BigCache")) == 1
                # The heartbeat, already firing, is picked up quietly by its new receiver: its next beat
                # (one heartbeat interval on) goes to team-b. Cycles run until it arrives.
                for _ in range(30):
                    if _posted(team_b, "Heartbeat"):
                        break
                    await daemon.evaluate_once()
                assert len(_posted(team_b, "Heartbeat")) == 1
                # team-a heard only the first heartbeat: no update, no reply, no BigCache.
                assert len(_posted(team_a)) == 1 and not team_a.calls_to("chat.update")
                assert {a.rule: a.state for a in daemon.tracker.active_alerts()} == {
                    "Heartbeat": "firing", "BigCache": "firing"}
                # Alert state and the outbox are the same ones, nothing left undelivered.
                assert daemon.tracker is tracker and daemon.outbox is outbox and outbox.depth() == 0

        asyncio.run(scenario())


def test_a_reload_that_changes_external_url_rebuilds_every_notifier_so_no_page_links_the_old_address(
        tmp_path: Path) -> None:
    daemon = make_daemon(tmp_path)

    async def scenario() -> None:
        async with running(daemon) as base:
            before = daemon.notifiers["team-a"]
            assert before.external_url == ""
            (tmp_path / "rocketwatch.yaml").write_text(config_text(tmp_path) + "external_url: https://rw.example.com\n")
            status, body = await reload(base)
            assert status == 200, body
            assert daemon.notifiers["team-a"] is not before
            assert daemon.notifiers["team-a"].external_url == "https://rw.example.com"

    asyncio.run(scenario())
