"""The route tree resolved for use: which routes (receiver + grouping + timers) an alert goes to."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from config.matchers import Matcher, matches_all, parse_matcher
from config.models import NotifyConfig
from config.routing import RouteConfig, TimeIntervalConfig
from daemon.notify.time_intervals import in_any

HEARTBEAT = "Heartbeat"
# rocketwatch's alerts already waited out their rule's `for`: no extra wait by default, every
# change goes out at the next cycle, and a group still firing is recalled every 4 hours.
DEFAULT_GROUP_WAIT = timedelta(0)
DEFAULT_GROUP_INTERVAL = timedelta(0)
DEFAULT_REPEAT_INTERVAL = timedelta(hours=4)


@dataclass(frozen=True)
class Route:
    """Where a matched alert goes and how its group is timed; `id` names the node in the tree."""

    id: str
    receiver: str
    group_by: tuple[str, ...]
    group_wait: timedelta = DEFAULT_GROUP_WAIT
    group_interval: timedelta = DEFAULT_GROUP_INTERVAL
    repeat_interval: timedelta = DEFAULT_REPEAT_INTERVAL
    mute_time_intervals: tuple[str, ...] = ()
    active_time_intervals: tuple[str, ...] = ()


@dataclass
class _Node:
    route: Route | None  # None: a node without a receiver (the default tree's root)
    matchers: tuple[Matcher, ...] = ()
    continue_: bool = False
    children: list[_Node] = field(default_factory=list)

    def match(self, labels: Mapping[str, str]) -> list[Route]:
        taken: list[Route] = []
        for child in self.children:
            if matches_all(child.matchers, labels):
                taken += child.match(labels)
                if not child.continue_:
                    break
        if not taken and self.route is not None:
            return [self.route]
        return taken


class Router:
    """Routes alerts by their labels (alertname and severity included) down the tree."""

    def __init__(
        self, root: _Node, intervals: Mapping[str, TimeIntervalConfig] | None = None, heartbeat: Route | None = None
    ) -> None:
        self.root = root
        self.intervals = dict(intervals or {})
        self.heartbeat = heartbeat

    @classmethod
    def default(cls, receivers: list[str], group_by: list[str]) -> Router:
        """Every alert to every receiver, grouped by `group_by`, with the default timers."""
        children = [_Node(Route(f"route.receivers[{r}]", r, tuple(group_by)), continue_=True) for r in receivers]
        return cls(_Node(None, children=children))

    @classmethod
    def from_config(cls, notify: NotifyConfig) -> Router:
        """The config's tree, or the default one when it has none; plus the heartbeat's own route."""
        heartbeat = None
        if notify.heartbeat is not None:
            heartbeat = Route("heartbeat", notify.heartbeat.receiver, ("alertname",),
                              repeat_interval=notify.heartbeat.interval)
        intervals = {t.name: t for t in notify.time_intervals}
        if notify.route is None:
            router = cls.default([r.name for r in notify.receivers], notify.group_by)
            router.intervals, router.heartbeat = intervals, heartbeat
            return router
        return cls(_build(notify.route, "route", None, notify.group_by), intervals, heartbeat)

    def match(self, labels: Mapping[str, str]) -> list[Route]:
        """The routes an alert with these labels goes to (the heartbeat only to its own)."""
        if labels.get("alertname") == HEARTBEAT:
            return [self.heartbeat] if self.heartbeat is not None else []
        return self.root.match(labels)

    def routes(self) -> list[Route]:
        """Every route of the tree (and the heartbeat's)."""
        found: list[Route] = []

        def visit(node: _Node) -> None:
            if node.route is not None:
                found.append(node.route)
            for child in node.children:
                visit(child)

        visit(self.root)
        return found + ([self.heartbeat] if self.heartbeat is not None else [])

    def silent_reason(self, route: Route, now: datetime) -> str | None:
        """`muted_time_interval` or `outside_active_time_interval` when the route must not send now."""
        if route.mute_time_intervals and in_any(self.intervals, route.mute_time_intervals, now):
            return "muted_time_interval"
        if route.active_time_intervals and not in_any(self.intervals, route.active_time_intervals, now):
            return "outside_active_time_interval"
        return None


def _build(config: RouteConfig, path: str, parent: Route | None, default_group_by: list[str]) -> _Node:
    receiver = config.receiver or (parent.receiver if parent else None)
    assert receiver is not None, "validated: the root route has a receiver"

    def pick(value, inherited, default):  # noqa: ANN001, ANN202 (three plain values)
        return value if value is not None else (inherited if parent is not None else default)

    route = Route(
        id=path,
        receiver=receiver,
        group_by=tuple(config.group_by) if config.group_by is not None else (
            parent.group_by if parent else tuple(default_group_by)),
        group_wait=pick(config.group_wait, parent.group_wait if parent else None, DEFAULT_GROUP_WAIT),
        group_interval=pick(config.group_interval, parent.group_interval if parent else None, DEFAULT_GROUP_INTERVAL),
        repeat_interval=pick(config.repeat_interval, parent.repeat_interval if parent else None,
                             DEFAULT_REPEAT_INTERVAL),
        # Time intervals are not inherited in Alertmanager either: each route says its own.
        mute_time_intervals=tuple(config.mute_time_intervals),
        active_time_intervals=tuple(config.active_time_intervals),
    )
    children = [_build(child, f"{path}.routes[{i}]", route, default_group_by) for i, child in enumerate(config.routes)]
    return _Node(route, tuple(parse_matcher(m) for m in config.matchers), config.continue_, children)
