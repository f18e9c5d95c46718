"""The admin calls a monitor makes, one method each, with typed results (ref §2).

extFields carry the Java request-header field names exactly. A non-success response code raises
the matching RemotingResponseError subclass; an unreadable body raises RemotingBodyError.
Success is judged by the code alone (a successful 307 carries the remark "not set any response code").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from daemon.collectors.remoting.bodies import (
    BodyError,
    ClusterInfo,
    ConsumerConnection,
    ConsumerRunningInfo,
    ConsumeStats,
    QueueTimeSpan,
    SubscriptionGroupConfig,
    TopicRouteData,
    TopicStatsTable,
    decode_cluster_info,
    decode_consume_stats,
    decode_consume_time_span,
    decode_consumer_connection,
    decode_consumer_running_info,
    decode_group_list,
    decode_kv_table,
    decode_subscription_groups,
    decode_topic_list,
    decode_topic_route,
    decode_topic_stats,
)
from daemon.collectors.remoting.client import RemotingClient
from daemon.collectors.remoting.codes import RequestCode, ResponseCode
from daemon.collectors.remoting.errors import RemotingBodyError, response_error
from daemon.collectors.remoting.frame import RemotingCommand

T = TypeVar("T")

NAMESRV = "namesrv"
BROKER = "broker"


class AdminClient:
    """Typed admin calls over a RemotingClient; `timeout` per call defaults to the client's."""

    def __init__(self, client: RemotingClient) -> None:
        self.client = client

    def new_cycle(self) -> None:
        """A collection cycle starts: addresses in reconnect backoff are dialled once more."""
        self.client.backoff.retry_now()

    async def _call(
        self,
        addr: str,
        code: RequestCode,
        ext_fields: dict[str, str] | None,
        *,
        role: str,
        context: str,
        timeout: float | None,
    ) -> RemotingCommand:
        response = await self.client.invoke(addr, code, ext_fields, timeout=timeout)
        if response.code != ResponseCode.SUCCESS:
            raise response_error(addr, code, response.code, response.remark, role=role, context=context)
        return response

    @staticmethod
    def _decode(addr: str, code: RequestCode, response: RemotingCommand, decoder: Callable[[bytes], T]) -> T:
        try:
            return decoder(response.body)
        except BodyError as exc:
            raise RemotingBodyError(addr, code, str(exc)) from None

    async def get_cluster_info(self, namesrv: str, *, timeout: float | None = None) -> ClusterInfo:
        """GET_BROKER_CLUSTER_INFO (106): brokers and clusters known to a name server."""
        code = RequestCode.GET_BROKER_CLUSTER_INFO
        response = await self._call(namesrv, code, None, role=NAMESRV, context="", timeout=timeout)
        return self._decode(namesrv, code, response, decode_cluster_info)

    async def get_route(self, namesrv: str, topic: str, *, timeout: float | None = None) -> TopicRouteData:
        """GET_ROUTEINFO_BY_TOPIC (105): the brokers and queues of a topic; TopicNotExist (17) if unknown."""
        code = RequestCode.GET_ROUTEINFO_BY_TOPIC
        response = await self._call(
            namesrv, code, {"topic": topic}, role=NAMESRV, context=f"topic {topic}", timeout=timeout
        )
        return self._decode(namesrv, code, response, decode_topic_route)

    async def get_topic_list(self, namesrv: str, *, timeout: float | None = None) -> list[str]:
        """GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206): every topic; the namesrv logs a WARN per call, so cache it."""
        code = RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER
        response = await self._call(namesrv, code, None, role=NAMESRV, context="", timeout=timeout)
        return self._decode(namesrv, code, response, decode_topic_list)

    async def get_subscription_groups(
        self, broker_addr: str, *, timeout: float | None = None
    ) -> dict[str, SubscriptionGroupConfig]:
        """GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201): every consumer group configured on a broker."""
        code = RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG
        response = await self._call(broker_addr, code, None, role=BROKER, context="", timeout=timeout)
        return self._decode(broker_addr, code, response, decode_subscription_groups)

    async def get_consumer_connections(
        self, broker_addr: str, group: str, *, timeout: float | None = None
    ) -> ConsumerConnection:
        """GET_CONSUMER_CONNECTION_LIST (203): a group's clients; ConsumerNotOnline (206) if none."""
        code = RequestCode.GET_CONSUMER_CONNECTION_LIST
        response = await self._call(
            broker_addr,
            code,
            {"consumerGroup": group},
            role=BROKER,
            context=f"group {group}",
            timeout=timeout,
        )
        return self._decode(broker_addr, code, response, decode_consumer_connection)

    async def get_consumer_running_info(
        self,
        broker_addr: str,
        group: str,
        client_id: str,
        jstack: bool = False,
        *,
        timeout: float | None = None,
    ) -> ConsumerRunningInfo:
        """GET_CONSUMER_RUNNING_INFO (307), relayed by the broker to the client `client_id`."""
        code = RequestCode.GET_CONSUMER_RUNNING_INFO
        ext = {"consumerGroup": group, "clientId": client_id, "jstackEnable": "true" if jstack else "false"}
        context = f"group {group} client {client_id}"
        response = await self._call(broker_addr, code, ext, role=BROKER, context=context, timeout=timeout)
        return self._decode(broker_addr, code, response, decode_consumer_running_info)

    async def get_consume_stats(
        self, broker_addr: str, group: str, topic: str | None = None, *, timeout: float | None = None
    ) -> ConsumeStats:
        """GET_CONSUME_STATS (208): a group's offsets on a broker, all its topics when `topic` is None."""
        code = RequestCode.GET_CONSUME_STATS
        ext = {"consumerGroup": group}
        context = f"group {group}"
        if topic is not None:
            ext["topic"] = topic
            context += f" topic {topic}"
        response = await self._call(broker_addr, code, ext, role=BROKER, context=context, timeout=timeout)
        return self._decode(broker_addr, code, response, decode_consume_stats)

    async def get_topic_stats(
        self, broker_addr: str, topic: str, *, timeout: float | None = None
    ) -> TopicStatsTable:
        """GET_TOPIC_STATS_INFO (202): a topic's queue offsets on a broker; TopicNotExist (17) if absent."""
        code = RequestCode.GET_TOPIC_STATS_INFO
        response = await self._call(
            broker_addr, code, {"topic": topic}, role=BROKER, context=f"topic {topic}", timeout=timeout
        )
        return self._decode(broker_addr, code, response, decode_topic_stats)

    async def get_broker_runtime_info(
        self, broker_addr: str, *, timeout: float | None = None
    ) -> dict[str, str]:
        """GET_BROKER_RUNTIME_INFO (28): the broker's runtime KVTable, values verbatim."""
        code = RequestCode.GET_BROKER_RUNTIME_INFO
        response = await self._call(broker_addr, code, None, role=BROKER, context="", timeout=timeout)
        return self._decode(broker_addr, code, response, decode_kv_table)

    async def query_consume_time_span(
        self, broker_addr: str, topic: str, group: str, *, timeout: float | None = None
    ) -> list[QueueTimeSpan]:
        """QUERY_CONSUME_TIME_SPAN (303): per-queue store times and consume delay of a group on a topic."""
        code = RequestCode.QUERY_CONSUME_TIME_SPAN
        response = await self._call(
            broker_addr,
            code,
            {"topic": topic, "group": group},
            role=BROKER,
            context=f"group {group} topic {topic}",
            timeout=timeout,
        )
        return self._decode(broker_addr, code, response, decode_consume_time_span)

    async def query_topic_consume_by_who(
        self, broker_addr: str, topic: str, *, timeout: float | None = None
    ) -> list[str]:
        """QUERY_TOPIC_CONSUME_BY_WHO (300): the groups consuming `topic` on a broker (online or with offsets)."""
        code = RequestCode.QUERY_TOPIC_CONSUME_BY_WHO
        response = await self._call(
            broker_addr, code, {"topic": topic}, role=BROKER, context=f"topic {topic}", timeout=timeout
        )
        return self._decode(broker_addr, code, response, decode_group_list)
