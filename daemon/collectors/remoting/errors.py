"""Typed errors of the remoting client, worded for the operator who reads them in an alert."""

from __future__ import annotations

from daemon.collectors.remoting.codes import ResponseCode, request_name, response_name
from daemon.collectors.remoting.frame import FrameError


def _one_line(text: str | None) -> str:
    # Server remarks carry "\nSee http://rocketmq.apache.org/docs/faq/ …": keep the message on one line.
    return " ".join((text or "").split())


class RemotingError(Exception):
    """Base of every error the remoting client raises; `addr` is the server it concerns."""

    def __init__(self, addr: str, message: str) -> None:
        self.addr = addr
        super().__init__(message)


class RemotingConnectError(RemotingError):
    """No TCP connection to `addr` could be opened."""

    def __init__(self, addr: str, reason: str = "") -> None:
        self.reason = reason
        detail = f": {reason}" if reason else ""
        super().__init__(addr, f"cannot connect to {addr}{detail}")


class RemotingConnectionLost(RemotingError):
    """The connection broke (peer closed, reset, client closed) while a request was in flight."""

    def __init__(self, addr: str, reason: str = "") -> None:
        self.reason = reason
        detail = f": {reason}" if reason else ""
        super().__init__(addr, f"connection to {addr} lost{detail}")


class RemotingFrameError(RemotingError, FrameError):
    """The server sent bytes that are not a valid frame; the connection was dropped."""

    def __init__(self, addr: str, reason: str) -> None:
        self.reason = reason
        super().__init__(addr, f"bad frame from {addr}: {reason}")


class RemotingTimeout(RemotingError):
    """No response to request `code` within `timeout` seconds."""

    def __init__(self, addr: str, code: int, timeout: float) -> None:
        self.code = code
        self.timeout = timeout
        super().__init__(addr, f"{addr} did not answer {request_name(code)} ({code}) within {timeout:g} s")


class RemotingBodyError(RemotingError):
    """A successful response whose body could not be decoded."""

    def __init__(self, addr: str, request_code: int, reason: str) -> None:
        self.request_code = request_code
        self.reason = reason
        super().__init__(
            addr,
            f"{addr} answered {request_name(request_code)} ({request_code}) with an unreadable body: {reason}",
        )


class RemotingResponseError(RemotingError):
    """The server answered with a non-success response code; `.code` is that code."""

    # Overridden by the subclasses; the generic class keeps the code it was built with.
    expected_code: int | None = None

    def __init__(
        self,
        addr: str,
        request_code: int,
        response_code: int,
        remark: str | None,
        *,
        role: str = "server",
        context: str = "",
    ) -> None:
        self.request_code = request_code
        self.response_code = response_code
        self.remark = remark
        self.role = role
        self.context = context
        what = f" for {context}" if context else ""
        said = f": {_one_line(remark)}" if _one_line(remark) else ""
        super().__init__(
            addr,
            f"{role} {addr} answered {request_name(request_code)} ({request_code}){what} "
            f"with {response_code} {response_name(response_code)}{said}",
        )

    @property
    def code(self) -> int:
        """The response code the server sent."""
        return self.response_code


class SystemErrorResponse(RemotingResponseError):
    """1 SYSTEM_ERROR: e.g. a missing header field, or a client not reachable through the broker."""

    expected_code = ResponseCode.SYSTEM_ERROR


class SystemBusyResponse(RemotingResponseError):
    """2 SYSTEM_BUSY: the server is shedding load."""

    expected_code = ResponseCode.SYSTEM_BUSY


class RequestNotSupported(RemotingResponseError):
    """3 REQUEST_CODE_NOT_SUPPORTED: the server version lacks this request."""

    expected_code = ResponseCode.REQUEST_CODE_NOT_SUPPORTED


class NoPermission(RemotingResponseError):
    """16 NO_PERMISSION: ACL refused the call."""

    expected_code = ResponseCode.NO_PERMISSION


class TopicNotExist(RemotingResponseError):
    """17 TOPIC_NOT_EXIST."""

    expected_code = ResponseCode.TOPIC_NOT_EXIST


class SubscriptionGroupNotExist(RemotingResponseError):
    """26 SUBSCRIPTION_GROUP_NOT_EXIST."""

    expected_code = ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST


class ConsumerNotOnline(RemotingResponseError):
    """206 CONSUMER_NOT_ONLINE: the broker has no connected client of the group."""

    expected_code = ResponseCode.CONSUMER_NOT_ONLINE


class ConsumeMessageTimeout(RemotingResponseError):
    """207 CONSUME_MSG_TIMEOUT: the client did not answer the broker's relay in time."""

    expected_code = ResponseCode.CONSUME_MSG_TIMEOUT


class GoAway(RemotingResponseError):
    """1500 GO_AWAY: a 5.x server shutting down."""

    expected_code = ResponseCode.GO_AWAY


_BY_CODE: dict[int, type[RemotingResponseError]] = {
    cls.expected_code: cls
    for cls in (
        SystemErrorResponse,
        SystemBusyResponse,
        RequestNotSupported,
        NoPermission,
        TopicNotExist,
        SubscriptionGroupNotExist,
        ConsumerNotOnline,
        ConsumeMessageTimeout,
        GoAway,
    )
    if cls.expected_code is not None
}


def response_error(
    addr: str,
    request_code: int,
    response_code: int,
    remark: str | None,
    *,
    role: str = "server",
    context: str = "",
) -> RemotingResponseError:
    """The most specific RemotingResponseError subclass for `response_code`."""
    cls = _BY_CODE.get(response_code, RemotingResponseError)
    return cls(addr, request_code, response_code, remark, role=role, context=context)
