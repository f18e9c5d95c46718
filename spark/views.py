"""Views (DESIGN §4): derived tables computed from the rows of the sample tables, as SQL.

Each view is declared in rules.tables.VIEWS (columns, key, descriptions) and built here from
relations of its source tables (their windows, or the rows of the cycles being folded), one row
per key per sample ts. Rows of different tables are joined on `ts`: one collection cycle stamps
everything it writes with the same ts, so a group whose client list came back empty in that
cycle has 0 clients.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from rules.tables import LAGGING_MESSAGES, VIEWS, Table
from spark.schema import SQL_TYPES
from spark.sql import name


@dataclass(frozen=True)
class ViewDef:
    """How to compute one view: the tables it reads (the first is required) and the builder, which
    takes a relation (FROM-clause text) per source table and returns the view's SELECT."""

    sources: tuple[str, ...]
    build: Callable[[Mapping[str, str]], str]


def _typed(query: str, view: Table) -> str:
    """Exactly the view's declared columns, in order, with their declared types."""
    columns = ", ".join(f"CAST({name(c.name)} AS {SQL_TYPES[c.type]}) AS {name(c.name)}" for c in view.columns)
    return f"SELECT {columns} FROM ({query})"


def _consumer_group(w: Mapping[str, str]) -> str:
    cycle = "`ts`, `cluster`, `group`"
    lagging = f"CAST(`lag` > {LAGGING_MESSAGES} AS BIGINT)"
    topic_cycle = "PARTITION BY `ts`, `cluster`, `topic`"
    return f"""
SELECT {cycle}, `topic`, `queues`, `lag`, `available`, `max_consume_delay_ms`,
  coalesce(`retry_lag`, 0) AS `retry_lag`, coalesce(`online_clients`, 0) AS `online_clients`,
  coalesce(`is_broadcast`, FALSE) AS `is_broadcast`, coalesce(`tag_filtered`, FALSE) AS `tag_filtered`,
  coalesce(`consume_ok_tps`, 0.0D) AS `consume_ok_tps`, coalesce(`consume_failed_tps`, 0.0D) AS `consume_failed_tps`,
  coalesce(`dlq_total`, 0) AS `dlq_total`, coalesce(`retry_total`, 0) AS `retry_total`,
  count(*) OVER ({topic_cycle}) - 1 AS `peer_groups`,
  sum({lagging}) OVER ({topic_cycle}) - {lagging} AS `peer_groups_lagging`
FROM (
  SELECT {cycle}, `topic`, count(*) AS `queues`, coalesce(sum(`lag`), 0) AS `lag`,
         coalesce(sum(`available`), 0) AS `available`, max(`consume_delay_ms`) AS `max_consume_delay_ms`
  FROM {w["consumer_queue"]} WHERE `topic_kind` <> 'retry' GROUP BY {cycle}, `topic`
)
LEFT JOIN (
  SELECT {cycle}, coalesce(sum(`lag`), 0) AS `retry_lag`
  FROM {w["consumer_queue"]} WHERE `topic_kind` = 'retry' GROUP BY {cycle}
) USING ({cycle})
LEFT JOIN (
  SELECT {cycle}, count(DISTINCT `client_id`) AS `online_clients`,
         max(`message_model` = 'BROADCASTING') AS `is_broadcast`
  FROM {w["consumer_client"]} GROUP BY {cycle}
) USING ({cycle})
LEFT JOIN (
  SELECT {cycle}, `topic`, max(NOT `_expr` IN ('*', '')) AS `tag_filtered`
  FROM (SELECT {cycle}, substring_index(`_sub`, '=', 1) AS `topic`,
               trim(regexp_extract(`_sub`, '^[^=]*=(.*)$', 1)) AS `_expr`
        FROM (SELECT {cycle}, explode(split(coalesce(`subscriptions`, ''), ';')) AS `_sub`
              FROM {w["consumer_client"]}))
  GROUP BY {cycle}, `topic`
) USING ({cycle}, `topic`)
LEFT JOIN (
  SELECT {cycle}, `topic`, coalesce(sum(`consume_ok_tps`), 0) AS `consume_ok_tps`,
         coalesce(sum(`consume_failed_tps`), 0) AS `consume_failed_tps`
  FROM {w["consumer_status"]} GROUP BY {cycle}, `topic`
) USING ({cycle}, `topic`)
LEFT JOIN (
  SELECT {cycle},
         coalesce(sum(CASE WHEN `topic_kind` = 'dlq' THEN `max_offset` END), 0) AS `dlq_total`,
         coalesce(sum(CASE WHEN `topic_kind` = 'retry' THEN `max_offset` END), 0) AS `retry_total`
  FROM {w["topic_queue"]} WHERE `group` IS NOT NULL GROUP BY {cycle}
) USING ({cycle})"""


def _queue_owner(w: Mapping[str, str]) -> str:
    keys = "`ts`, `cluster`, `group`, `topic`, `broker`, `queue_id`"
    return (f"SELECT {keys}, CAST(size(`_clients`) AS BIGINT) AS `owners`, array_join(`_clients`, ',') AS `clients` "
            f"FROM (SELECT {keys}, array_sort(collect_set(`client_id`)) AS `_clients` "
            f"FROM {w['process_queue']} WHERE NOT `dropped` GROUP BY {keys})")


def _topic_activity(w: Mapping[str, str]) -> str:
    return f"""
SELECT *, CAST(unix_micros(`ts`) - unix_micros(`last_update_ts`) AS DOUBLE) / 1000000 AS `update_age_s`
FROM (
  SELECT `ts`, `cluster`, `topic`, `broker`, first(`topic_kind`) AS `topic_kind`,
         coalesce(sum(`max_offset`), 0) AS `max_offset_total`, max(`last_update_ts`) AS `last_update_ts`
  FROM {w["topic_queue"]} GROUP BY `ts`, `cluster`, `topic`, `broker`
)
LEFT JOIN (
  SELECT `ts`, `cluster`, `broker`, max(`put_tps`) AS `broker_put_tps`
  FROM {w["broker"]} WHERE `broker_id` = 0 GROUP BY `ts`, `cluster`, `broker`
) USING (`ts`, `cluster`, `broker`)"""


def _dlq_queue(w: Mapping[str, str]) -> str:
    # The settings are the client's, the same on every queue it holds: one figure per group and cycle.
    cycle = "`ts`, `cluster`, `group`"
    return f"""
SELECT * EXCEPT (`reporting_clients`, `orderly`),
  coalesce(`reporting_clients`, 0) AS `reporting_clients`, coalesce(`orderly`, FALSE) AS `orderly`
FROM (SELECT * FROM {w["topic_queue"]} WHERE `topic_kind` = 'dlq')
LEFT JOIN (
  SELECT {cycle}, count(DISTINCT `client_id`) AS `reporting_clients`,
         min(`max_reconsume_times`) AS `max_reconsume_times`,
         max(`max_reconsume_times`) AS `max_reconsume_times_highest`, max(`orderly`) AS `orderly`
  FROM {w["process_queue"]} GROUP BY {cycle}
) USING ({cycle})"""


VIEW_DEFS: dict[str, ViewDef] = {
    "dlq_queue": ViewDef(("topic_queue", "process_queue"), _dlq_queue),
    "consumer_group": ViewDef(("consumer_queue", "consumer_client", "consumer_status", "topic_queue"),
                              _consumer_group),
    "queue_owner": ViewDef(("process_queue",), _queue_owner),
    "topic_activity": ViewDef(("topic_queue", "broker"), _topic_activity),
}


def compute_view(view: str, sources: Mapping[str, str]) -> str:
    """The SELECT of view `view` from a relation per source table (each with its derived columns)."""
    return _typed(VIEW_DEFS[view].build(sources), VIEWS[view])
