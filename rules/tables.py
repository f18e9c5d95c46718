"""The sample tables: the vocabulary every rule is written in.

Declared once here; the Parquet writer derives its pyarrow schema from it, Spark its
StructType, `rocketwatch tables` prints it. This module imports neither pyarrow nor pyspark,
so `rocketwatch check` can validate rules against it without a JVM.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Logical column types; each side (pyarrow, Spark) maps them to its own.
STRING = "string"
INT32 = "int32"
INT64 = "int64"
FLOAT64 = "float64"
BOOL = "bool"
TIMESTAMP = "timestamp"  # UTC, microsecond precision

COLUMN_TYPES = (STRING, INT32, INT64, FLOAT64, BOOL, TIMESTAMP)


@dataclass(frozen=True)
class Column:
    """One column of a sample table."""

    name: str
    type: str
    description: str
    unit: str = ""
    nullable: bool = False
    # Derived columns are not stored: Spark computes them from this expression (rule syntax).
    derived: str | None = None


@dataclass(frozen=True)
class Table:
    """A sample table: its columns and the key that identifies one series."""

    name: str
    description: str
    columns: tuple[Column, ...]
    key: tuple[str, ...]
    source: str = ""
    _by_name: dict[str, Column] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._by_name.update({c.name: c for c in self.columns})

    def column(self, name: str) -> Column | None:
        """The column called `name`, or None."""
        return self._by_name.get(name)

    @property
    def stored_columns(self) -> tuple[Column, ...]:
        """Columns written to Parquet (everything but derived ones)."""
        return tuple(c for c in self.columns if c.derived is None)

    @property
    def derived_columns(self) -> tuple[Column, ...]:
        """Columns Spark computes at read time."""
        return tuple(c for c in self.columns if c.derived is not None)

    @property
    def column_names(self) -> tuple[str, ...]:
        """Every column a rule may name, stored and derived."""
        return tuple(c.name for c in self.columns)


def _common() -> tuple[Column, ...]:
    return (
        Column("ts", TIMESTAMP, "UTC time the collector took this sample"),
        Column("cluster", STRING, "cluster name as configured (or as the namesrv reports it)"),
    )


PROCESS_QUEUE = Table(
    name="process_queue",
    description="One row per client x message queue it holds: the client's ProcessQueue.",
    source="GET_CONSUMER_RUNNING_INFO (307) mqTable + properties",
    key=("cluster", "group", "topic", "broker", "queue_id", "client_id"),
    columns=_common()
    + (
        Column("group", STRING, "consumer group"),
        Column("client_id", STRING, "client id, ip@instance"),
        Column("topic", STRING, "topic of the queue (may be %RETRY%<group>)"),
        Column("broker", STRING, "broker name that owns the queue"),
        Column("queue_id", INT32, "queue id on that broker"),
        Column("cached_msg_count", INT64, "messages pulled and not yet consumed", "messages"),
        Column("cached_msg_size_mib", INT64, "size of the cached messages (floor)", "MiB"),
        Column("cached_min_offset", INT64, "lowest cached offset (0 when the cache is empty)", "offset"),
        Column("cached_max_offset", INT64, "highest cached offset (0 when the cache is empty)", "offset"),
        Column("commit_offset", INT64, "client's in-memory committed offset", "offset"),
        Column("last_pull_ts", TIMESTAMP, "last pull of this queue", nullable=True),
        Column("last_consume_ts", TIMESTAMP, "last consumption from this queue", nullable=True),
        Column("locked", BOOL, "orderly lock held"),
        Column("dropped", BOOL, "ProcessQueue dropped (queue moved away)"),
        Column("try_unlock_times", INT64, "failed unlock attempts (orderly)"),
        Column("pull_threshold_for_queue", INT64, "client's effective pullThresholdForQueue", "messages"),
        Column("pull_threshold_size_mib", INT64, "client's pullThresholdSizeForQueue", "MiB"),
        Column("max_span", INT64, "client's consumeConcurrentlyMaxSpan", "offsets"),
        Column("consume_timeout_min", INT64, "client's consumeTimeout", "minutes"),
        Column("max_reconsume_times", INT64, "client's effective maxReconsumeTimes"),
        Column("orderly", BOOL, "client consumes orderly (PROP_CONSUMEORDERLY)"),
        Column(
            "span",
            INT64,
            "offsets between the lowest and highest cached message",
            "offsets",
            derived="cached_max_offset - cached_min_offset",
        ),
    ),
)

CONSUMER_QUEUE = Table(
    name="consumer_queue",
    description="One row per group x topic x broker x queue: the broker's view of consumption.",
    source="GET_CONSUME_STATS (208), QUERY_CONSUME_TIME_SPAN (303)",
    key=("cluster", "group", "topic", "broker", "queue_id"),
    columns=_common()
    + (
        Column("group", STRING, "consumer group"),
        Column("topic", STRING, "topic (normal or %RETRY%<group>)"),
        Column("broker", STRING, "broker name"),
        Column("queue_id", INT32, "queue id"),
        Column("broker_offset", INT64, "next offset the broker will write", "offset"),
        Column("consumer_offset", INT64, "committed offset (next to consume)", "offset"),
        Column("pull_offset", INT64, "last pull's next offset (5.1+)", "offset", nullable=True),
        Column("last_consumed_store_ts", TIMESTAMP, "store time of the last consumed message", nullable=True),
        Column("consume_delay_ms", INT64, "now - store time of the next message to consume", "ms", nullable=True),
        Column("topic_kind", STRING, "normal or retry"),
        Column("lag", INT64, "messages not yet committed", "messages", derived="broker_offset - consumer_offset"),
        Column(
            "inflight",
            INT64,
            "pulled but not committed",
            "messages",
            derived="coalesce(pull_offset, consumer_offset) - consumer_offset",
        ),
        Column(
            "available",
            INT64,
            "written but not pulled",
            "messages",
            derived="broker_offset - coalesce(pull_offset, consumer_offset)",
        ),
    ),
)

COLLECTOR_HEALTH = Table(
    name="collector_health",
    description="One row per call a collector made: whether the target answered.",
    source="every collector",
    key=("cluster", "target", "call"),
    columns=_common()
    + (
        Column("target", STRING, "address or name the call went to"),
        Column("call", STRING, "request name, e.g. GET_CONSUME_STATS"),
        Column("ok", BOOL, "the call succeeded"),
        Column("error", STRING, "what went wrong, for an operator", nullable=True),
        Column("latency_ms", FLOAT64, "time to answer or fail", "ms"),
    ),
)

TABLES: dict[str, Table] = {t.name: t for t in (PROCESS_QUEUE, CONSUMER_QUEUE, COLLECTOR_HEALTH)}


def get_table(name: str) -> Table:
    """The table called `name`; KeyError lists the known ones."""
    try:
        return TABLES[name]
    except KeyError:
        raise KeyError(f"unknown table {name!r}; known tables: {', '.join(sorted(TABLES))}") from None
