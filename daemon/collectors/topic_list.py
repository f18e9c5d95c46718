"""The name server's topic list (206), asked for sparingly, and the groups its %RETRY% topics name.

Every 206 call logs a WARN on the name server (ref §2), so the list is cached per name server set
and refreshed at most every `refresh_s`; a failed refresh keeps the previous list.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from config.name_filter import is_system_group
from daemon.collectors.remoting.codes import RequestCode

RETRY_PREFIX = "%RETRY%"
DEFAULT_REFRESH_S = 300.0


def groups_of_retry_topics(topics: Iterable[str]) -> set[str]:
    """Groups named by `%RETRY%<group>` topics; 5.x pop retry topics give their group, not a group of their own.

    A pop-mode group's retry topic is `%RETRY%<group>+<topic>` (V2) or `%RETRY%<group>_<topic>` (V1, the
    default): the latter is `<group>_<topic>` where `%RETRY%<group>` and `<topic>` are topics too.
    """
    topics = list(topics)
    names = set(topics)
    groups = set()
    for topic in topics:
        if topic.startswith(RETRY_PREFIX) and len(topic) > len(RETRY_PREFIX):
            name = topic[len(RETRY_PREFIX):].split("+", 1)[0]
            if not _pop_retry_v1(name, names):
                groups.add(name)
    return groups


def _pop_retry_v1(name: str, topics: set[str]) -> bool:
    """`<group>_<topic>` with `%RETRY%<group>` and `<topic>` both topics: a pop retry topic, not a group."""
    return any(RETRY_PREFIX + name[:i] in topics and name[i + 1:] in topics
               for i, ch in enumerate(name) if ch == "_")


@dataclass
class TopicListCache:
    """The last topic list per name server set and when it was fetched (monotonic seconds)."""

    refresh_s: float = DEFAULT_REFRESH_S
    entries: dict[tuple[str, ...], tuple[float, list[str]]] = field(default_factory=dict)

    async def get(self, namesrv: Iterable[str], fetch: Callable[[], Awaitable[list[str] | None]]) -> list[str]:
        """The cached list when fresh, else `fetch()`'s; a failed fetch (None) keeps the old list."""
        key = tuple(sorted(namesrv))
        cached = self.entries.get(key)
        now = time.monotonic()
        if cached is not None and now - cached[0] < self.refresh_s:
            return cached[1]
        topics = await fetch()
        if topics is None:
            return cached[1] if cached is not None else []
        self.entries[key] = (now, topics)
        return topics


async def retry_topic_groups(cycle: Any, namesrv: list[str], cache: TopicListCache) -> set[str]:
    """Groups named by %RETRY% topics of the (cached) namesrv topic list, filtered like 201's."""
    code = RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER

    async def fetch() -> list[str] | None:
        for ns in namesrv:
            topics, _ = await cycle.call(ns, code, lambda ns=ns: cycle.admin.get_topic_list(ns, timeout=cycle.call_timeout))
            if topics is not None:
                return topics
        return None

    named = groups_of_retry_topics(await cache.get(namesrv, fetch))
    return {g for g in named if cycle.selection.group(g, is_system=is_system_group(g))}


# One per process: the daemon's cycles and `collect --once` share it.
TOPIC_LISTS = TopicListCache()
