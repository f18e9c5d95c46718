"""An asyncio client of the remoting protocol: one multiplexed TCP connection per address (ref §1.4).

Requests on one connection are matched to responses by `opaque`; a reader task per connection
resolves the waiting futures. A broken connection fails everything in flight on it and is
replaced on the next call. The client never heartbeats, so servers send it no requests; any
that arrive anyway are ignored.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import ssl
import time
from dataclasses import dataclass, field

from daemon.collectors.remoting.acl import AclCredentials, signed_fields
from daemon.collectors.remoting.backoff import ReconnectBackoff
from daemon.collectors.remoting.codes import CLIENT_VERSION, request_name
from daemon.collectors.remoting.errors import (
    RemotingConnectError,
    RemotingConnectionLost,
    RemotingError,
    RemotingFrameError,
    RemotingTimeout,
)
from daemon.collectors.remoting.frame import (
    DEFAULT_MAX_FRAME,
    JSON,
    FrameError,
    RemotingCommand,
    encode,
    read_command,
)

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 5.0
DEFAULT_CONNECT_TIMEOUT = 3.0
# Java keeps opaque in an int; stay in the positive int32 range so every server echoes it unchanged.
_OPAQUE_MOD = 2**31


def split_addr(addr: str) -> tuple[str, int]:
    """("host", port) from "host:port" (IPv6 hosts may be bracketed)."""
    host, sep, port = addr.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"address {addr!r} is not host:port")
    return host.strip("[]"), int(port)


@dataclass
class _Connection:
    """One TCP connection and the requests in flight on it."""

    addr: str
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    pending: dict[int, asyncio.Future[RemotingCommand]] = field(default_factory=dict)
    reader_task: asyncio.Task[None] | None = None
    broken: BaseException | None = None

    @property
    def usable(self) -> bool:
        """Still open and not failed."""
        return self.broken is None and not self.writer.is_closing()

    def fail(self, exc: RemotingError) -> None:
        """Mark broken, fail every waiting request with `exc`, close the socket."""
        if self.broken is None:
            self.broken = exc
        for fut in self.pending.values():
            if not fut.done():
                fut.set_exception(exc)
        self.pending.clear()
        self.writer.close()


class RemotingClient:
    """Sends requests and returns responses; the response code is the caller's to check."""

    def __init__(
        self,
        *,
        max_frame: int = DEFAULT_MAX_FRAME,
        default_timeout: float = DEFAULT_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        language: str = "PYTHON",
        version: int = CLIENT_VERSION,
        serialize_type: int = JSON,
        credentials: AclCredentials | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.max_frame = max_frame
        self.default_timeout = default_timeout
        self.connect_timeout = connect_timeout
        self.language = language
        self.version = version
        self.serialize_type = serialize_type
        self.credentials = credentials
        # Brokers in tlsMode permissive or enforcing accept TLS on the same port (ref §1.5).
        self.ssl_context = ssl_context
        self._conns: dict[str, _Connection] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._opaque = itertools.count()
        self._server_versions: dict[str, int] = {}
        self._closed = False
        self.backoff = ReconnectBackoff()

    def server_version(self, addr: str) -> int | None:
        """The version ordinal `addr` reported in its latest response (ref §1.5), if any."""
        return self._server_versions.get(addr)

    def _next_opaque(self) -> int:
        return next(self._opaque) % _OPAQUE_MOD

    async def _connection(self, addr: str, deadline: float) -> _Connection:
        conn = self._conns.get(addr)
        if conn is not None and conn.usable:
            return conn
        # One opener per address: concurrent first calls share the connection instead of racing.
        lock = self._locks.setdefault(addr, asyncio.Lock())
        async with lock:
            conn = self._conns.get(addr)
            if conn is not None and conn.usable:
                return conn
            if self._closed:
                raise RemotingConnectionLost(addr, "client is closed")
            blocked = self.backoff.blocked(addr)
            if blocked is not None:
                raise RemotingConnectError(addr, blocked)
            try:
                reader, writer = await self._open(addr, deadline)
            except RemotingConnectError as exc:
                delay = self.backoff.failed(addr, exc.reason)
                log.debug("connect to %s failed (%s); next attempt in %.1f s", addr, exc.reason, delay)
                raise
            self.backoff.succeeded(addr)
            conn = _Connection(addr, reader, writer)
            conn.reader_task = asyncio.create_task(self._read_loop(conn), name=f"remoting-reader {addr}")
            self._conns[addr] = conn
            return conn

    async def _open(self, addr: str, deadline: float) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        host, port = split_addr(addr)
        wait = max(0.0, min(self.connect_timeout, deadline - time.monotonic()))
        try:
            return await asyncio.wait_for(asyncio.open_connection(host, port, ssl=self.ssl_context), wait)
        except TimeoutError:
            raise RemotingConnectError(addr, f"no TCP connection within {wait:.3g} s") from None
        except ConnectionRefusedError:
            raise RemotingConnectError(addr, "connection refused (nothing listens there)") from None
        except ssl.SSLError as exc:
            raise RemotingConnectError(addr, f"TLS handshake failed: {exc.reason or exc}") from None
        except OSError as exc:
            raise RemotingConnectError(addr, exc.strerror or str(exc)) from None

    async def _read_loop(self, conn: _Connection) -> None:
        error: RemotingError
        try:
            while True:
                cmd = await read_command(conn.reader, self.max_frame)
                if not cmd.is_response:
                    # Only heartbeating clients are sent requests (ref §1.4); we never heartbeat.
                    log.debug("ignoring request %s from %s", request_name(cmd.code), conn.addr)
                    continue
                self._server_versions[conn.addr] = cmd.version
                fut = conn.pending.pop(cmd.opaque, None)
                if fut is None or fut.done():
                    log.debug(
                        "dropping response opaque=%d from %s: no request waits for it", cmd.opaque, conn.addr
                    )
                    continue
                fut.set_result(cmd)
        except asyncio.IncompleteReadError as exc:
            if exc.partial:
                reason = f"peer closed mid-frame after {len(exc.partial)} of {exc.expected} bytes"
            else:
                reason = "peer closed the connection"
            error = RemotingConnectionLost(conn.addr, reason)
        except FrameError as exc:
            error = RemotingFrameError(conn.addr, str(exc))
        except OSError as exc:
            error = RemotingConnectionLost(conn.addr, exc.strerror or str(exc))
        except Exception as exc:  # never leave callers waiting on a dead reader
            log.exception("reader for %s failed", conn.addr)
            error = RemotingConnectionLost(conn.addr, f"internal error: {exc!r}")
        except asyncio.CancelledError:
            conn.fail(RemotingConnectionLost(conn.addr, "client closed"))
            raise
        if conn.pending:
            log.debug(
                "connection to %s failed with %d request(s) in flight: %s",
                conn.addr,
                len(conn.pending),
                error,
            )
        conn.fail(error)
        if self._conns.get(conn.addr) is conn:
            del self._conns[conn.addr]

    def _fields(self, ext_fields: dict[str, str] | None, body: bytes) -> dict[str, str]:
        fields = {k: str(v) for k, v in (ext_fields or {}).items()}
        return fields if self.credentials is None else signed_fields(fields, body, self.credentials)

    async def invoke(
        self,
        addr: str,
        code: int,
        ext_fields: dict[str, str] | None = None,
        body: bytes = b"",
        timeout: float | None = None,
    ) -> RemotingCommand:
        """Send request `code` to `addr` and return its response (any response code)."""
        timeout = self.default_timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        conn = await self._connection(addr, deadline)
        opaque = self._next_opaque()
        request = RemotingCommand(
            code=code,
            opaque=opaque,
            language=self.language,
            version=self.version,
            ext_fields=self._fields(ext_fields, body),
            body=body,
            serialize_type=self.serialize_type,
        )
        fut: asyncio.Future[RemotingCommand] = asyncio.get_running_loop().create_future()
        conn.pending[opaque] = fut
        try:
            async with asyncio.timeout_at(_loop_deadline(deadline)):
                conn.writer.write(encode(request))
                await conn.writer.drain()
                return await fut
        except TimeoutError:
            raise RemotingTimeout(addr, code, timeout) from None
        except (ConnectionError, OSError) as exc:
            # A write on a dead socket: everything else in flight on it is doomed too.
            lost = RemotingConnectionLost(addr, exc.strerror or str(exc) or type(exc).__name__)
            conn.fail(lost)
            if self._conns.get(addr) is conn:
                del self._conns[addr]
            raise lost from None
        finally:
            conn.pending.pop(opaque, None)

    async def close(self) -> None:
        """Close every connection; requests still in flight fail with RemotingConnectionLost."""
        self._closed = True
        conns = list(self._conns.values())
        self._conns.clear()
        for conn in conns:
            conn.fail(RemotingConnectionLost(conn.addr, "client closed"))
            if conn.reader_task is not None:
                conn.reader_task.cancel()
        for conn in conns:
            if conn.reader_task is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await conn.reader_task
            with contextlib.suppress(OSError):
                await conn.writer.wait_closed()

    async def __aenter__(self) -> RemotingClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


def _loop_deadline(monotonic_deadline: float) -> float:
    # asyncio.timeout_at wants loop time; the default loop clock is time.monotonic, but don't assume.
    loop = asyncio.get_running_loop()
    return loop.time() + (monotonic_deadline - time.monotonic())
