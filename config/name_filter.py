"""Which clusters, topics and groups a cycle collects: include/exclude patterns (DESIGN §5, ref §5.1).

A pattern is a glob (`orders-*`) or, prefixed with `re:`, a regular expression matched against the
whole name (`re:^CID_(pay|bill)_.*$`). A name is collected when it matches an include pattern (or
there are none) and no exclude pattern. Topics and groups RocketMQ creates for itself are excluded
unless `system` is set, so a first look at a cluster shows the operator's own consumers only.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

REGEX_PREFIX = "re:"

# Topics the broker, the name server or the tools create (ref §5.1, TopicValidator, MixAll).
SYSTEM_TOPIC_NAMES = frozenset(
    {
        "TBW102",
        "SCHEDULE_TOPIC_XXXX",
        "BenchmarkTest",
        "OFFSET_MOVED_EVENT",
        "SELF_TEST_TOPIC",
        "TRANS_CHECK_MAX_TIME_TOPIC",
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRACE_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "rmq_sys_REVIVE_LOG",
    }
)
SYSTEM_TOPIC_PATTERN = re.compile(r"^(?:rmq_sys_|RMQ_SYS_|%SYS%)|_REPLY_TOPIC$")


def is_system_topic(topic: str) -> bool:
    """True for topics RocketMQ itself creates (TBW102, SCHEDULE_TOPIC_XXXX, rmq_sys_*, …)."""
    return topic in SYSTEM_TOPIC_NAMES or SYSTEM_TOPIC_PATTERN.search(topic) is not None


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """A glob or `re:` regular expression as a compiled whole-name regex; ValueError names a bad one."""
    if pattern.startswith(REGEX_PREFIX):
        source = pattern[len(REGEX_PREFIX):]
        try:
            return re.compile(rf"(?:{source})\Z")
        except re.error as exc:
            raise ValueError(f"pattern {pattern!r} is not a valid regular expression: {exc}") from exc
    return re.compile(fnmatch.translate(pattern))


@dataclass(frozen=True)
class NameFilter:
    """Include/exclude patterns over one kind of name; `system` names count only when allowed."""

    include: tuple[re.Pattern[str], ...] = ()
    exclude: tuple[re.Pattern[str], ...] = ()

    @classmethod
    def of(cls, include: Iterable[str] = (), exclude: Iterable[str] = ()) -> NameFilter:
        """Compile the patterns of a config section."""
        return cls(tuple(compile_pattern(p) for p in include), tuple(compile_pattern(p) for p in exclude))

    def allows(self, name: str) -> bool:
        """True when `name` matches an include pattern (or none is given) and no exclude pattern."""
        if self.include and not any(p.match(name) for p in self.include):
            return False
        return not any(p.match(name) for p in self.exclude)


@dataclass(frozen=True)
class Selection:
    """What one cluster's cycle collects: groups and topics by pattern, system names off by default."""

    groups: NameFilter = field(default_factory=NameFilter)
    topics: NameFilter = field(default_factory=NameFilter)
    system: bool = False
    # Groups whose clients are asked for a jstack (costly for the client): none unless configured.
    jstack: tuple[re.Pattern[str], ...] = ()

    def wants_jstack(self, group: str) -> bool:
        """True when `group` is configured in jstack_groups."""
        return any(p.match(group) for p in self.jstack)

    def group(self, group: str, *, is_system: bool) -> bool:
        """True when the cycle collects `group`."""
        return (self.system or not is_system) and self.groups.allows(group)

    def topic(self, topic: str) -> bool:
        """True when the cycle collects the normal topic `topic` (retry/DLQ topics follow their group)."""
        return (self.system or not is_system_topic(topic)) and self.topics.allows(topic)


# Groups the broker or the tools create for themselves (ref §5.1, MixAll): not anyone's consumers.
SYSTEM_GROUP_NAMES = frozenset(
    {
        "TOOLS_CONSUMER",
        "DEFAULT_CONSUMER",
        "__MONITOR_CONSUMER",
        "SELF_TEST_C_GROUP",
        "FILTERSRV_CONSUMER",
        "CID_ONS-HTTP-PROXY",
        "SCHEDULE_CONSUMER",
        "CID_SYS_RMQ_TRANS",
    }
)
SYSTEM_GROUP_PATTERN = re.compile(r"^(?:CID_RMQ_SYS_|CID_ONSAPI_)")


def is_system_group(group: str) -> bool:
    """True for groups RocketMQ itself creates (TOOLS_CONSUMER, CID_RMQ_SYS_*, …)."""
    return group in SYSTEM_GROUP_NAMES or SYSTEM_GROUP_PATTERN.match(group) is not None
