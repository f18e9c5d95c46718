"""Request and response codes of the RocketMQ remoting protocol that rocketwatch uses (ref §1.6, §2)."""

from __future__ import annotations

from enum import IntEnum


class RequestCode(IntEnum):
    """Request codes (identical in 4.9.x and 5.x)."""

    GET_BROKER_RUNTIME_INFO = 28
    GET_MAX_OFFSET = 30
    GET_MIN_OFFSET = 31
    GET_ALL_TOPIC_CONFIG = 21
    GET_ALL_CONSUMER_OFFSET = 43
    GET_ROUTEINFO_BY_TOPIC = 105
    GET_BROKER_CLUSTER_INFO = 106
    GET_ALL_SUBSCRIPTIONGROUP_CONFIG = 201
    GET_TOPIC_STATS_INFO = 202
    GET_CONSUMER_CONNECTION_LIST = 203
    GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206
    GET_CONSUME_STATS = 208
    QUERY_TOPIC_CONSUME_BY_WHO = 300
    QUERY_CONSUME_TIME_SPAN = 303
    GET_CONSUMER_RUNNING_INFO = 307


class ResponseCode(IntEnum):
    """Response codes a monitor will see."""

    SUCCESS = 0
    SYSTEM_ERROR = 1
    SYSTEM_BUSY = 2
    REQUEST_CODE_NOT_SUPPORTED = 3
    SERVICE_NOT_AVAILABLE = 14
    NO_PERMISSION = 16
    TOPIC_NOT_EXIST = 17
    QUERY_NOT_FOUND = 22
    SUBSCRIPTION_NOT_EXIST = 24
    SUBSCRIPTION_GROUP_NOT_EXIST = 26
    CONSUMER_NOT_ONLINE = 206
    CONSUME_MSG_TIMEOUT = 207
    FLOW_CONTROL = 215
    GO_AWAY = 1500


def request_name(code: int) -> str:
    """The request's protocol name, or `CODE_<n>` for one we do not know."""
    try:
        return RequestCode(code).name
    except ValueError:
        return f"CODE_{code}"


def response_name(code: int) -> str:
    """The response code's protocol name, or `CODE_<n>`."""
    try:
        return ResponseCode(code).name
    except ValueError:
        return f"CODE_{code}"


# Version ordinal we send: 413 = V5_0_0. At >= 401 the namesrv answers routes in standard JSON;
# above 475 a 5.x server shutting down answers GO_AWAY instead of serving (ref §1.5).
CLIENT_VERSION = 413
