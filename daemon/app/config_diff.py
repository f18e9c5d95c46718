"""What changed between the running configuration and a reloaded one, and what of it waits for a restart.

Pure: two configs and two rule lists in, a description out. A reload applies everything except
`RESTART_ONLY` (the state directory, the store, Spark's session, the HTTP listener are opened once
at start); those keep their running value and the reply names them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from config.models import ClusterConfig, NotifyConfig, RocketwatchConfig
from config.routing import RouteConfig
from daemon.app.jobs import job_intervals
from daemon.notify.routing import Route, Router

# Settings read once at start; a reload keeps the running value and says a restart is needed.
RESTART_ONLY = ("state_dir", "store", "spark.master", "spark.conf", "http.enabled", "http.listen", "ha")

# Settings described by their own section of ConfigChanges rather than as "also applied".
_DESCRIBED = {
    "clusters", "rules", "rule_overrides", "notify", "collect.interval", "evaluate.interval",
    "evaluate.stale_after", "maintenance.interval", "state_dir", "store_path", "spark", "http.enabled",
    "http.listen", "ha",
}
_REBUILD = "kept state is rebuilt from the store at the next evaluation"


@dataclass(frozen=True)
class IntervalChange:
    """One scheduled job whose interval changed."""

    job: str
    old: timedelta
    new: timedelta


@dataclass(frozen=True)
class ConfigChanges:
    """Everything a reload changes, by kind, in words an operator reads in the reply and the log."""

    rules_added: tuple[str, ...] = ()
    rules_removed: tuple[str, ...] = ()
    rules_changed: tuple[str, ...] = ()
    routes: tuple[str, ...] = ()
    receivers_added: tuple[str, ...] = ()
    receivers_removed: tuple[str, ...] = ()
    receivers_changed: tuple[str, ...] = ()
    intervals: tuple[IntervalChange, ...] = ()
    stale_after: tuple[timedelta, timedelta] | None = None
    clusters_added: tuple[str, ...] = ()
    clusters_removed: tuple[str, ...] = ()
    clusters_changed: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # name -> fields
    applied: tuple[str, ...] = ()  # other settings, applied as they are
    restart: tuple[str, ...] = ()  # settings kept at their running value until a restart

    @property
    def rules(self) -> bool:
        """True when any rule was added, removed or changed."""
        return bool(self.rules_added or self.rules_removed or self.rules_changed)

    @property
    def receivers(self) -> bool:
        """True when any receiver was added, removed or changed."""
        return bool(self.receivers_added or self.receivers_removed or self.receivers_changed)

    @property
    def empty(self) -> bool:
        """True when the reloaded file changes nothing."""
        return not self.lines()

    def lines(self) -> list[str]:
        """One line per kind of change, for the reload reply and the log."""
        out: list[str] = []
        if self.rules:
            out.append("rules: " + _joined(
                ("added", self.rules_added, ""), ("removed", self.rules_removed, " (their alerts resolve)"),
                ("changed", self.rules_changed, "")))
        if self.routes:
            # Said because a moved alert stays quiet on its new route until something happens.
            out.append("routes: " + "; ".join(self.routes) + " (alerts already firing reach a new receiver "
                       "at their next change or reminder)")
        if self.receivers:
            out.append("receivers: " + _joined(
                ("added", self.receivers_added, ""), ("removed", self.receivers_removed, ""),
                ("changed", self.receivers_changed, "")))
        if self.intervals:
            out.append("intervals (rescheduled): " + "; ".join(
                f"{c.job} every {format_duration(c.old)} -> {format_duration(c.new)}" for c in self.intervals))
        if self.stale_after is not None:
            old, new = self.stale_after
            out.append(f"stale_after: {format_duration(old)} -> {format_duration(new)}")
        if self.rules or self.stale_after is not None:
            out.append(f"engine: {_REBUILD} (rules or stale_after changed)")
        if self.clusters_added or self.clusters_removed or self.clusters_changed:
            out.append("clusters: " + _joined(
                ("added", self.clusters_added, " (collected from now on)"),
                ("removed", self.clusters_removed, " (no longer collected)"),
                ("changed", tuple(f"{name} ({', '.join(fields)})" for name, fields in self.clusters_changed.items()), ""),
            ))
        if self.applied:
            out.append("also applied: " + ", ".join(self.applied))
        if self.restart:
            out.append("needs a restart (the running value stays until then): " + "; ".join(self.restart))
        return out

    def to_json(self) -> dict[str, Any]:
        """The changes as JSON for the reload endpoint's reply."""
        return {
            "rules": {"added": list(self.rules_added), "removed": list(self.rules_removed),
                      "changed": list(self.rules_changed)},
            "routes": list(self.routes),
            "receivers": {"added": list(self.receivers_added), "removed": list(self.receivers_removed),
                          "changed": list(self.receivers_changed)},
            "intervals": {c.job: {"from_s": c.old.total_seconds(), "to_s": c.new.total_seconds()}
                          for c in self.intervals},
            "stale_after": None if self.stale_after is None else {
                "from_s": self.stale_after[0].total_seconds(), "to_s": self.stale_after[1].total_seconds()},
            "clusters": {"added": list(self.clusters_added), "removed": list(self.clusters_removed),
                         "changed": {k: list(v) for k, v in self.clusters_changed.items()}},
            "applied": list(self.applied),
            "restart_needed": list(self.restart),
        }


def diff_configs(
    old: RocketwatchConfig, new: RocketwatchConfig, old_rules: Sequence[Any], new_rules: Sequence[Any]
) -> ConfigChanges:
    """What reloading `new` over the running `old` changes (rules are the loaded rulebooks' rules)."""
    rules_added, rules_removed, rules_changed = _keyed_diff(
        {r.alert: r.model_dump_json() for r in old_rules}, {r.alert: r.model_dump_json() for r in new_rules})
    receivers_added, receivers_removed, receivers_changed = _keyed_diff(
        {r.name: r for r in old.notify.receivers}, {r.name: r for r in new.notify.receivers})
    clusters_added, clusters_removed, changed = _keyed_diff(
        {c.name: c for c in old.clusters}, {c.name: c for c in new.clusters})
    old_clusters = {c.name: c for c in old.clusters}
    new_clusters = {c.name: c for c in new.clusters}
    old_intervals, new_intervals = job_intervals(old), job_intervals(new)
    return ConfigChanges(
        rules_added=rules_added, rules_removed=rules_removed, rules_changed=rules_changed,
        routes=tuple(route_changes(old.notify, new.notify)),
        receivers_added=receivers_added, receivers_removed=receivers_removed, receivers_changed=receivers_changed,
        intervals=tuple(IntervalChange(job, old_intervals[job], new_intervals[job])
                        for job in new_intervals if job in old_intervals and old_intervals[job] != new_intervals[job]),
        stale_after=(old.stale_after, new.stale_after) if old.stale_after != new.stale_after else None,
        clusters_added=clusters_added, clusters_removed=clusters_removed,
        clusters_changed={name: _cluster_fields(old_clusters[name], new_clusters[name]) for name in changed},
        applied=tuple(path for path in _changed_paths(old, new) if not _described(path)),
        restart=tuple(restart_needed(old, new)),
    )


def applied_config(running: RocketwatchConfig, loaded: RocketwatchConfig) -> RocketwatchConfig:
    """The configuration a reload runs: `loaded`, with the restart-only settings kept as they run now."""
    http = loaded.http.model_copy(update={"enabled": running.http.enabled, "listen": running.http.listen})
    return loaded.model_copy(update={
        "state_dir": running.state_dir, "store_path": running.store_path, "spark": running.spark, "http": http,
        "ha": running.ha,
    })


def restart_needed(old: RocketwatchConfig, new: RocketwatchConfig) -> list[str]:
    """The restart-only settings that differ, each as `name old -> new`."""
    found = []
    for name, before, after in (
        ("state_dir", old.state_dir, new.state_dir),
        ("store", old.store, new.store),
        ("spark.master", old.spark.master, new.spark.master),
        ("http.enabled", old.http.enabled, new.http.enabled),
        ("http.listen", old.http.listen, new.http.listen),
    ):
        if before != after:
            found.append(f"{name} {before} -> {after}")
    if old.spark.conf != new.spark.conf:
        # Keys only: Spark settings may carry credentials (S3 keys) that never belong in a reply.
        keys = sorted(k for k in old.spark.conf.keys() | new.spark.conf.keys()
                      if old.spark.conf.get(k) != new.spark.conf.get(k))
        found.append(f"spark.conf ({', '.join(keys)})")
    if old.ha != new.ha:
        # The coordinator and the lease are set up at start; a node joins or leaves HA by a restart.
        found.append(f"ha ({_ha_text(old)} -> {_ha_text(new)})")
    return found


def _ha_text(config: RocketwatchConfig) -> str:
    # Where and how, never a secret: the connection string holds none (config/ha.py refuses it).
    if config.ha is None:
        return "single node"
    lease = config.ha.lease
    return (f"node {config.ha.node or 'host name'}, lease ttl {format_duration(lease.ttl)} renew "
            f"{format_duration(lease.renew_every)} margin {format_duration(lease.margin)}")


def route_changes(old: NotifyConfig, new: NotifyConfig) -> list[str]:
    """Each route (and the heartbeat) added, removed or changed, with its effective receiver and timers."""
    before, after = _route_table(old), _route_table(new)
    out = []
    for path, fields in after.items():
        if path not in before:
            out.append(f"{path} added: {_route_text(fields)}")
        elif fields != before[path]:
            out.append(f"{path}: " + ", ".join(
                f"{k} {before[path].get(k, 'unset')} -> {v}" for k, v in fields.items() if before[path].get(k) != v))
    out += [f"{path} removed (was {_route_text(fields)})" for path, fields in before.items() if path not in after]
    if old.inhibit_rules != new.inhibit_rules:
        out.append(f"inhibit_rules: {len(new.inhibit_rules)} rule(s), were {len(old.inhibit_rules)}, changed")
    added, removed, changed = _keyed_diff({t.name: t for t in old.time_intervals}, {t.name: t for t in new.time_intervals})
    if added or removed or changed:
        out.append("time_intervals: " + _joined(("added", added, ""), ("removed", removed, ""),
                                                ("changed", changed, "")))
    return out


def format_duration(value: timedelta) -> str:
    """`1h30m`, `45s`, `0s`: a duration as the config file writes it."""
    seconds = value.total_seconds()
    if seconds != int(seconds):
        return f"{seconds:g}s"
    left, text = int(seconds), ""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if left >= size:
            text += f"{left // size}{unit}"
            left %= size
    return text + (f"{left}s" if left or not text else "")


def _route_table(notify: NotifyConfig) -> dict[str, dict[str, str]]:
    # The router resolves inheritance (receiver, grouping, timers); matchers come from the file.
    matchers = dict(_route_matchers(notify.route, "route")) if notify.route is not None else {}
    return {route.id: _route_fields(route, matchers.get(route.id, ())) for route in Router.from_config(notify).routes()}


def _route_matchers(route: RouteConfig, path: str) -> Iterable[tuple[str, tuple[str, ...]]]:
    yield path, tuple(route.matchers)
    for i, child in enumerate(route.routes):
        yield from _route_matchers(child, f"{path}.routes[{i}]")


def _route_fields(route: Route, matchers: tuple[str, ...]) -> dict[str, str]:
    fields = {
        "receiver": route.receiver,
        "matchers": ", ".join(matchers) or "all alerts",
        "group_by": ", ".join(route.group_by) or "nothing",
        "group_wait": format_duration(route.group_wait),
        "group_interval": format_duration(route.group_interval),
        "repeat_interval": format_duration(route.repeat_interval),
    }
    if route.mute_time_intervals:
        fields["mute_time_intervals"] = ", ".join(route.mute_time_intervals)
    if route.active_time_intervals:
        fields["active_time_intervals"] = ", ".join(route.active_time_intervals)
    return fields


def _route_text(fields: Mapping[str, str]) -> str:
    return f"{fields['matchers']} to {fields['receiver']}"


def _cluster_fields(old: ClusterConfig, new: ClusterConfig) -> tuple[str, ...]:
    return tuple(name for name in ClusterConfig.model_fields if getattr(old, name) != getattr(new, name))


def _keyed_diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[tuple[str, ...], ...]:
    added = tuple(k for k in new if k not in old)
    removed = tuple(k for k in old if k not in new)
    changed = tuple(k for k in new if k in old and old[k] != new[k])
    return added, removed, changed


def _changed_paths(old: RocketwatchConfig, new: RocketwatchConfig) -> list[str]:
    # Python mode keeps SecretStr objects, which compare by value: a changed token is seen, never shown.
    before, after = _flatten(old.model_dump(), ""), _flatten(new.model_dump(), "")
    return [path for path in sorted(before.keys() | after.keys()) if before.get(path) != after.get(path)]


def _flatten(value: Any, path: str) -> dict[str, Any]:
    if isinstance(value, dict) and value:
        flat: dict[str, Any] = {}
        for key, item in value.items():
            flat.update(_flatten(item, f"{path}.{key}" if path else str(key)))
        return flat
    return {path: value}


def _described(path: str) -> bool:
    return any(path == d or path.startswith(d + ".") for d in _DESCRIBED)


def _joined(*parts: tuple[str, Sequence[str], str]) -> str:
    # (label, names, note): "added a, b (note); removed c", leaving out labels with no names.
    return "; ".join(f"{label} {', '.join(names)}{note}" for label, names, note in parts if names)
