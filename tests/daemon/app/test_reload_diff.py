"""What a reload changes, described from two configs and two rule sets (daemon/app/config_diff.py, pure)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from config.models import RocketwatchConfig
from daemon.app.config_diff import IntervalChange, applied_config, diff_configs, format_duration
from rules.loader import load_rule_files

RULES = """\
groups:
  - name: mine
    rules:
{rules}
"""
RULE = """\
      - alert: {name}
        kind: threshold
        table: process_queue
        value: cached_msg_count
        above: {{warning: {limit}}}
        summary: "{{group}} caches {{value}}"
        diagnosis: "slow consumer"
        next_steps: "look at consumeRT"
"""


def config(**sections: Any) -> RocketwatchConfig:
    """A valid config: one cluster, two console receivers, plus `sections` (top-level keys)."""
    base: dict[str, Any] = {
        "clusters": [{"name": "prod", "namesrv": ["10.0.0.1:9876"]}],
        "notify": {"receivers": [{"type": "console", "name": "team-a"}, {"type": "console", "name": "team-b"}],
                   "route": {"receiver": "team-a"}, "heartbeat": {"receiver": "team-a"}},
    }
    return RocketwatchConfig.model_validate({**base, **sections})


def rules(tmp_path: Path, name: str, **limits: int) -> list:
    """Threshold rules named and limited by `limits`, loaded as the daemon loads them."""
    path = tmp_path / f"{name}.yaml"
    path.write_text(RULES.format(rules="".join(RULE.format(name=n, limit=v) for n, v in limits.items())))
    return list(load_rule_files([path]).rules)


def test_the_same_file_changes_nothing(tmp_path: Path) -> None:
    same = rules(tmp_path, "a", BigCache=500)
    changes = diff_configs(config(), config(), same, rules(tmp_path, "b", BigCache=500))
    assert changes.empty and changes.lines() == []
    assert not changes.rules and not changes.receivers


def test_rules_added_removed_and_changed_are_named(tmp_path: Path) -> None:
    old = rules(tmp_path, "old", BigCache=500, SlowPull=3)
    new = rules(tmp_path, "new", BigCache=900, DeepLag=1000)
    changes = diff_configs(config(), config(), old, new)
    assert (changes.rules_added, changes.rules_removed, changes.rules_changed) == (("DeepLag",), ("SlowPull",),
                                                                                   ("BigCache",))
    assert changes.lines() == [
        "rules: added DeepLag; removed SlowPull (their alerts resolve); changed BigCache",
        "engine: kept state is rebuilt from the store at the next evaluation (rules or stale_after changed)",
    ]


def test_a_heartbeat_moved_and_a_route_added_are_described_with_their_receivers() -> None:
    old = config()
    new = config(notify={
        "receivers": [{"type": "console", "name": "team-a"}, {"type": "console", "name": "team-b"}],
        "route": {"receiver": "team-a", "group_wait": "30s",
                  "routes": [{"receiver": "team-b", "matchers": ['alertname="BigCache"']}]},
        "heartbeat": {"receiver": "team-b", "interval": "1m"},
    })
    changes = diff_configs(old, new, [], [])
    assert changes.routes == (
        "route: group_wait 0s -> 30s",
        'route.routes[0] added: alertname="BigCache" to team-b',
        "heartbeat: receiver team-a -> team-b, repeat_interval 5m -> 1m",
    )
    assert not changes.receivers  # the receivers themselves are the same


def test_a_route_removed_and_a_child_inheriting_its_parents_change() -> None:
    tree = {"receiver": "team-a", "routes": [{"matchers": ['severity="critical"']}, {"receiver": "team-b"}]}
    old = config(notify={"receivers": [{"type": "console", "name": "team-a"}, {"type": "console", "name": "team-b"}],
                         "route": tree})
    new = config(notify={"receivers": [{"type": "console", "name": "team-a"}, {"type": "console", "name": "team-b"}],
                         "route": {**tree, "receiver": "team-b", "routes": tree["routes"][:1]}})
    # The child without a receiver of its own follows its parent's: both say so.
    assert diff_configs(old, new, [], []).routes == (
        "route: receiver team-a -> team-b",
        "route.routes[0]: receiver team-a -> team-b",
        "route.routes[1] removed (was all alerts to team-b)",
    )


def test_receivers_added_removed_and_changed_never_show_a_secret() -> None:
    def notify(receivers: list[dict[str, Any]]) -> dict[str, Any]:
        return {"notify": {"receivers": receivers, "route": {"receiver": receivers[0]["name"]}}}

    slack = {"type": "slack", "name": "team-a", "channel": "#a", "token": "xoxb-old-secret"}
    old = config(**notify([slack, {"type": "console", "name": "team-b"}]))
    new = config(**notify([{**slack, "token": "xoxb-new-secret"}, {"type": "console", "name": "team-c"}]))
    changes = diff_configs(old, new, [], [])
    assert (changes.receivers_added, changes.receivers_removed, changes.receivers_changed) == (
        ("team-c",), ("team-b",), ("team-a",))
    text = "\n".join(changes.lines())
    assert "receivers: added team-c; removed team-b; changed team-a" in text
    assert "secret" not in text


def test_intervals_are_per_job_and_stale_after_follows_the_collect_interval() -> None:
    old = config(clusters=[{"name": "prod", "namesrv": ["10.0.0.1:9876"]}, {"name": "qa", "namesrv": ["10.0.0.2:9876"]}])
    new = config(
        clusters=[{"name": "prod", "namesrv": ["10.0.0.1:9876"]}, {"name": "qa", "namesrv": ["10.0.0.2:9876"]}],
        collect={"interval": "10s"}, evaluate={"interval": "15s"}, maintenance={"interval": "30m"},
        notify={**old.notify.model_dump(mode="json", by_alias=True, exclude_none=True), "interval": "2s"},
    )
    changes = diff_configs(old, new, [], [])
    thirty, ten = timedelta(seconds=30), timedelta(seconds=10)
    assert changes.intervals == (
        IntervalChange("collect:prod", thirty, ten), IntervalChange("collect:qa", thirty, ten),
        IntervalChange("evaluate", thirty, timedelta(seconds=15)),
        IntervalChange("dispatch", ten, timedelta(seconds=2)),
        IntervalChange("maintain", timedelta(hours=1), timedelta(minutes=30)),
    )
    # No stale_after in either file: it is 2 x the collect interval, so it changed too.
    assert changes.stale_after == (timedelta(minutes=1), timedelta(seconds=20))
    assert "stale_after: 1m -> 20s" in changes.lines()
    assert changes.to_json()["intervals"]["evaluate"] == {"from_s": 30.0, "to_s": 15.0}


def test_clusters_added_removed_and_changed_name_the_changed_fields() -> None:
    old = config(clusters=[{"name": "prod", "namesrv": ["10.0.0.1:9876"]}, {"name": "qa", "namesrv": ["10.0.0.2:9876"]}])
    new = config(clusters=[{"name": "prod", "namesrv": ["10.0.0.9:9876"], "system_names": True},
                           {"name": "stage", "namesrv": ["10.0.0.3:9876"]}])
    changes = diff_configs(old, new, [], [])
    assert changes.clusters_added == ("stage",) and changes.clusters_removed == ("qa",)
    assert changes.clusters_changed == {"prod": ("namesrv", "system_names")}
    assert ("clusters: added stage (collected from now on); removed qa (no longer collected); "
            "changed prod (namesrv, system_names)") in changes.lines()
    assert changes.intervals == ()  # the jobs of added and removed clusters are not interval changes


def test_restart_only_settings_are_named_and_kept_at_their_running_value(tmp_path: Path) -> None:
    running = config(state_dir=str(tmp_path / "a"))
    loaded = config(state_dir=str(tmp_path / "b"), spark={"master": "local[4]", "conf": {"fs.s3a.secret.key": "hush"}},
                    http={"listen": "0.0.0.0:9787", "token": "t0ken"}, collect={"timeout": "2s"})
    changes = diff_configs(running, loaded, [], [])
    assert changes.restart == (
        f"state_dir {tmp_path / 'a'} -> {tmp_path / 'b'}",
        f"store {tmp_path / 'a' / 'store'} -> {tmp_path / 'b' / 'store'}",
        "spark.master local[2] -> local[4]",
        "http.listen 127.0.0.1:9787 -> 0.0.0.0:9787",
        "spark.conf (fs.s3a.secret.key)",
    )
    # Everything else is applied as it is, secrets named but never shown.
    assert changes.applied == ("collect.timeout", "http.token")
    assert not any("hush" in line or "t0ken" in line for line in changes.lines())

    applied = applied_config(running, loaded)
    assert applied.state_dir == running.state_dir and applied.store == running.store
    assert applied.spark == running.spark and applied.http.listen == running.http.listen
    assert applied.http.token is not None and applied.http.token.get_secret_value() == "t0ken"
    assert applied.collect.timeout == timedelta(seconds=2)
    # A second reload of the same file still says the restart is pending.
    assert diff_configs(applied, loaded, [], []).restart == changes.restart


def test_durations_read_as_the_config_writes_them() -> None:
    assert [format_duration(timedelta(seconds=s)) for s in (0, 45, 60, 90, 3600, 5400, 86400, 1.5)] == [
        "0s", "45s", "1m", "1m30s", "1h", "1h30m", "1d", "1.5s"]


def test_turning_ha_on_or_changing_its_lease_waits_for_a_restart() -> None:
    running = config()
    loaded = config(ha={"connection": "host=pg dbname=rocketwatch user=rw", "password_env": "RW_PG_PASSWORD",
                        "node": "ops-1", "lease": {"ttl": "30s", "renew_every": "10s", "margin": "5s"}})
    changes = diff_configs(running, loaded, [], [])
    assert changes.restart == ("ha (single node -> node ops-1, lease ttl 30s renew 10s margin 5s)",)
    assert changes.applied == ()
    assert applied_config(running, loaded).ha is None
