"""Request → reply for the simulated namesrv and brokers: codes, required extFields, error texts.

Error codes and remarks are the ones a 4.9.7 namesrv/broker gave in the capture (fixtures
README): 17 `topic[X] not exist`, 206 `the consumer group[g] not online`, 105's "No topic route
info" text, 3 ` request type N not supported`, and 1 with `the custom field <f> is null` as
`RemotingHelper.exceptionSimpleDesc` renders it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import daemon.simulator.bodies as bodies
from daemon.collectors.remoting.frame import RemotingCommand
from daemon.simulator.broker import Broker
from daemon.simulator.fastjson_writer import to_bytes
from daemon.simulator.model import ClusterModel

SUCCESS, SYSTEM_ERROR, NOT_SUPPORTED, TOPIC_NOT_EXIST, CONSUMER_NOT_ONLINE = 0, 1, 3, 17, 206

# Required (@CFNotNull) header fields per request code (ref §2).
REQUIRED: dict[int, tuple[str, ...]] = {
    105: ("topic",), 202: ("topic",), 203: ("consumerGroup",), 208: ("consumerGroup",),
    307: ("consumerGroup", "clientId"), 30: ("topic", "queueId"), 31: ("topic", "queueId"),
    303: ("topic", "group"), 300: ("topic",),
}  # fmt: skip

NAMESRV_CODES = frozenset({105, 106, 206})
BROKER_CODES = frozenset({28, 30, 31, 43, 201, 202, 203, 208, 300, 303, 307})


@dataclass
class Reply:
    """What goes into the response: code, remark, header extFields, body."""

    code: int = SUCCESS
    body: bytes = b""
    remark: str | None = None
    ext: dict[str, str] = field(default_factory=dict)


def _ok(obj: Any, standard: bool = False) -> Reply:
    return Reply(body=to_bytes(obj, standard))


def _missing(cmd: RemotingCommand) -> Reply | None:
    for name in REQUIRED.get(cmd.code, ()):
        if name not in cmd.ext_fields:
            return Reply(
                SYSTEM_ERROR,
                remark=(
                    "org.apache.rocketmq.remoting.exception.RemotingCommandException: "
                    f"the custom field <{name}> is null, org.apache.rocketmq.remoting.protocol."
                    "RemotingCommand.decodeCommandCustomHeader(RemotingCommand.java:246)"
                ),
            )
    return None


def _not_supported(code: int) -> Reply:
    return Reply(NOT_SUPPORTED, remark=f" request type {code} not supported")


def namesrv_reply(model: ClusterModel, cmd: RemotingCommand) -> Reply:
    """Answer one request sent to the namesrv."""
    if cmd.code not in NAMESRV_CODES:
        return _not_supported(cmd.code)
    if (err := _missing(cmd)) is not None:
        return err
    if cmd.code == 106:
        return _ok(bodies.cluster_info(model))
    if cmd.code == 206:
        return _ok(bodies.topic_list(model))
    topic = cmd.ext_fields["topic"]
    route = bodies.topic_route(model, topic)
    if route is None:
        return Reply(
            TOPIC_NOT_EXIST,
            remark=f"No topic route info in name server for the topic: {topic}\n"
            "See http://rocketmq.apache.org/docs/faq/ for further details.",
        )
    # V4_9_4 (401) and later, or acceptStandardJsonOnly=true, get quoted brokerAddrs keys.
    standard = cmd.version >= 401 or cmd.ext_fields.get("acceptStandardJsonOnly", "").lower() == "true"
    return _ok(route, standard)


def _queue_id(cmd: RemotingCommand) -> int:
    return int(cmd.ext_fields["queueId"])


def broker_reply(model: ClusterModel, broker: Broker, cmd: RemotingCommand, namesrv_addr: str) -> Reply:
    """Answer one request sent to a broker."""
    if cmd.code not in BROKER_CODES:
        return _not_supported(cmd.code)
    if (err := _missing(cmd)) is not None:
        return err
    ext = cmd.ext_fields
    code = cmd.code
    if code == 28:
        return _ok(bodies.runtime_info(model, broker))
    if code in (30, 31):
        try:
            qid = _queue_id(cmd)
        except ValueError as exc:
            return Reply(SYSTEM_ERROR, remark=f"java.lang.NumberFormatException: {exc}")
        cq = broker.queue(ext["topic"], qid)
        value = 0 if cq is None else (cq.max_offset if code == 30 else cq.min_offset)
        return Reply(ext={"offset": str(value)})
    if code == 43:
        return _ok(bodies.all_consumer_offsets(broker))
    if code == 201:
        return _ok(bodies.subscription_groups(model))
    if code in (202, 303):
        topic = ext["topic"]
        obj = (
            bodies.topic_stats(broker, topic)
            if code == 202
            else bodies.consume_time_span(model, broker, topic, ext["group"])
        )
        if obj is None:
            return Reply(TOPIC_NOT_EXIST, remark=f"topic[{topic}] not exist")
        return _ok(obj)
    if code == 203:
        group = ext["consumerGroup"]
        g = model.groups.get(group)
        conn = bodies.consumer_connection(g) if g is not None else None
        if conn is None:
            return Reply(CONSUMER_NOT_ONLINE, remark=f"the consumer group[{group}] not online")
        return _ok(conn)
    if code == 208:
        return _ok(bodies.consume_stats(model, broker, ext["consumerGroup"], ext.get("topic") or None))
    if code == 300:
        return _ok(bodies.consumed_by(model, broker, ext["topic"]))
    # 307: the broker relays to the client; a successful relay keeps the remark the broker's
    # response object was created with.
    group, client_id = ext["consumerGroup"], ext["clientId"]
    client = model.client_of(group, client_id)
    if client is None:
        return Reply(SYSTEM_ERROR, remark=f"The Consumer <{group}> <{client_id}> not online")
    jstack = ext.get("jstackEnable", "false").lower() == "true"
    info = bodies.running_info(client, model.now, namesrv_addr, jstack)
    return Reply(body=to_bytes(info), remark="not set any response code")
