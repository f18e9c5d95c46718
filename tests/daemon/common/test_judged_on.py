"""What a group is judged on, from rows decoded from the real 4.9.7 and 5.3.3 captures, and the built-in rules."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from daemon.collectors.client_rows import (
    consumer_client_rows,
    consumer_queue_rows,
    pop_queue_rows,
    process_queue_rows,
)
from daemon.collectors.remoting import bodies
from daemon.common.judged_on import BROKER_SIDE, POP, PROCESS_QUEUE, GroupBasis, judged_on, view_sources
from rules.loader import BUILTIN_DIR, load_rule_files
from rules.views_catalog import VIEWS
from tests.daemon.collectors import test_real_frames_v5 as v5
from tests.daemon.collectors import wire as v4

NOW = datetime(2026, 11, 27, 0, 47, 29, tzinfo=UTC)
RULES = list(load_rule_files([BUILTIN_DIR]).rules)
Rows = dict[str, list[dict[str, Any]]]


def captured(body: Any, cluster: str, rnd: str, group: str, pid: int | None) -> Rows:
    """A collection of one group as the collector builds it from the captured 203, 208 and 307 bodies."""
    rows: Rows = {t: [] for t in ("consumer_client", "consumer_queue", "process_queue", "pop_queue")}
    conn = bodies.decode_consumer_connection(body(f"{rnd}_203_GET_CONSUMER_CONNECTION_LIST_{group}"))
    rows["consumer_client"] = consumer_client_rows(cluster, NOW, group, conn)
    rows["consumer_queue"] = consumer_queue_rows(
        cluster, NOW, group, bodies.decode_consume_stats(body(f"{rnd}_208_GET_CONSUME_STATS_{group}")))
    if pid is not None:
        info = bodies.decode_consumer_running_info(body(f"{rnd}_307_GET_CONSUMER_RUNNING_INFO_{group}_{pid}"))
        client = conn.client_ids[0]
        rows["process_queue"] = process_queue_rows(cluster, NOW, group, client, info)
        rows["pop_queue"] = pop_queue_rows(cluster, NOW, group, client, info)
    return rows


def merged(*collections: Rows) -> Rows:
    out: Rows = {}
    for rows in collections:
        for table, table_rows in rows.items():
            out.setdefault(table, []).extend(table_rows)
    return out


def basis(rows: Rows, group: str, failures: tuple[str, ...] = ()) -> GroupBasis:
    (found,) = [b for b in judged_on(rows, RULES, failures) if b.group == group]
    return found


def skipped(b: GroupBasis) -> dict[str, str]:
    return {rule: s.why for s in b.skipped for rule in s.rules}


def test_a_4x_push_consumer_is_judged_on_its_process_queues() -> None:
    b = basis(captured(v4.body, "prod", "t1", "stuckGroup", 5764), "stuckGroup")
    assert b.checks == (PROCESS_QUEUE,)
    assert "ProcessQueue" in b.why[0] and "OrderTopic" in b.why[0]
    assert {"StuckMessage", "ProcessQueueSpanTooLong", "ConsumptionBlocked", "ConsumerOffsetStalled",
            "OneGroupLagging"} <= set(b.rules)
    assert "PopConsumerStuck" not in b.rules and not b.skipped


def test_5x_pop_and_push_groups_are_told_apart_by_the_running_info_not_the_connection_list() -> None:
    rows = merged(captured(v5.body, "prod", "t1", "payGroup", 32694), captured(v5.body, "prod", "t1", "popGroup", 539))
    pay, pop = basis(rows, "payGroup"), basis(rows, "popGroup")
    assert pay.checks == (PROCESS_QUEUE,) and "PopConsumerStuck" not in pay.rules
    # The real pop-mode client also holds the classic %RETRY%popGroup queue as a ProcessQueue.
    assert POP in pop.checks and "PopConsumerStuck" in pop.rules
    assert "mqPopTable" in pop.why[pop.checks.index(POP)] and "CONSUME_PASSIVELY" in pop.why[pop.checks.index(POP)]


def test_orderly_clients_skip_the_checks_whose_rules_say_not_orderly() -> None:
    rows = captured(v4.body, "prod", "t1", "stuckGroup", 5764)
    rows["process_queue"] = [{**r, "orderly": True} for r in rows["process_queue"]]
    b = basis(rows, "stuckGroup")
    why = skipped(b)
    assert {"StuckMessage", "ProcessQueueSpanTooLong"} <= set(why)
    assert "orderly" in why["StuckMessage"] and "not orderly" in why["StuckMessage"]
    assert "StuckMessage" not in b.rules and "ConsumptionBlocked" in b.rules  # its rule has no such filter


def test_a_broadcasting_group_is_told_why_broker_side_lag_checks_skip_it() -> None:
    rows = captured(v4.body, "prod", "t1", "healthyGroup", 5770)
    rows["consumer_client"] = [{**r, "message_model": "BROADCASTING"} for r in rows["consumer_client"]]
    rows["consumer_queue"] = []  # the collector asks no consume stats of a broadcasting group
    why = skipped(basis(rows, "healthyGroup"))
    assert {"OneGroupLagging", "ConsumerGroupOffline"} <= set(why)
    assert "offsets on the client" in why["OneGroupLagging"]


def test_grpc_clients_through_a_proxy_are_judged_broker_side_only() -> None:
    rows = captured(v5.body, "prod", "t1", "popGroup", None)
    rows["consumer_client"] = [{**r, "consume_type": "CONSUME_POP"} for r in rows["consumer_client"]]
    b = basis(rows, "popGroup")
    assert b.checks == (BROKER_SIDE,)
    assert "proxy" in b.why[0] and "OTLP" in b.why[0]
    assert "ConsumerOffsetStalled" in b.rules and "StuckMessage" not in b.rules and "PopConsumerStuck" not in b.rules


def test_a_failed_running_info_request_is_named_as_the_reason() -> None:
    rows = captured(v4.body, "prod", "t1", "slowGroup", None)
    client = rows["consumer_client"][0]["client_id"]
    failure = f"GET_CONSUMER_RUNNING_INFO to 127.0.0.1:10911: no answer for {client} within 6 s"
    b = basis(rows, "slowGroup", ("GET_BROKER_RUNTIME_INFO to 127.0.0.1:10911: refused", failure))
    assert b.checks == (BROKER_SIDE,) and failure in b.why[0]


def test_an_offline_group_is_judged_on_its_offsets() -> None:
    rows = captured(v4.body, "prod", "t1", "failGroup", None)
    rows["consumer_client"] = []
    b = basis(rows, "failGroup")
    assert b.checks == (BROKER_SIDE,) and "no client is online" in b.why[0]
    assert "ConsumerGroupOffline" in b.rules


def test_a_new_rule_shows_up_by_itself() -> None:
    rows = captured(v4.body, "prod", "t1", "stuckGroup", 5764)
    new = next(r for r in RULES if r.alert == "StuckMessage").model_copy(update={"alert": "MyOwnCheck"})
    (b,) = judged_on(rows, [*RULES, new])
    assert "MyOwnCheck" in b.rules
    orderly = {**rows, "process_queue": [{**r, "orderly": True} for r in rows["process_queue"]]}
    (b,) = judged_on(orderly, [*RULES, new])
    assert "MyOwnCheck" in skipped(b) and "MyOwnCheck" not in b.rules


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_each_views_sources_are_declared_tables(view: str) -> None:
    from rules.tables import TABLES

    assert view_sources(view) and set(view_sources(view)) <= set(TABLES)


def test_a_rule_excluding_the_group_says_so() -> None:
    rows = captured(v4.body, "prod", "t1", "stuckGroup", 5764)
    quiet = next(r for r in RULES if r.alert == "StuckMessage").model_copy(update={"exclude": {"group": "stuck.*"}})
    (b,) = judged_on(rows, [r for r in RULES if r.alert != "StuckMessage"] + [quiet])
    assert "StuckMessage" not in b.rules and "exclude: group: stuck.*" in skipped(b)["StuckMessage"]
