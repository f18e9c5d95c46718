"""A tiny remoting server on 127.0.0.1 for client tests: each request goes to a test-supplied handler."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Awaitable, Callable

from daemon.collectors.remoting.frame import FLAG_RESPONSE, RemotingCommand, encode, read_command

Handler = Callable[["FakeServer", RemotingCommand, asyncio.StreamWriter], Awaitable[None]]


def response_bytes(
    request: RemotingCommand,
    code: int = 0,
    *,
    body: bytes = b"",
    remark: str | None = None,
    ext: dict[str, str] | None = None,
    opaque: int | None = None,
    serialize_type: int | None = None,
) -> bytes:
    """The encoded response frame to `request`."""
    return encode(
        RemotingCommand(
            code=code,
            opaque=request.opaque if opaque is None else opaque,
            flag=FLAG_RESPONSE,
            language="JAVA",
            version=407,
            remark=remark,
            ext_fields=ext or {},
            body=body,
            serialize_type=request.serialize_type if serialize_type is None else serialize_type,
        )
    )


class FakeServer:
    """Accepts connections, reads frames, hands each request to `handler` (run as its own task)."""

    def __init__(self, handler: Handler, ssl_context: ssl.SSLContext | None = None) -> None:
        self.handler = handler
        self.ssl_context = ssl_context
        self.requests: list[RemotingCommand] = []
        self.connections = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.addr = ""

    async def __aenter__(self) -> FakeServer:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0, ssl=self.ssl_context)
        port = self._server.sockets[0].getsockname()[1]
        self.addr = f"127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self._server.wait_closed()

    def _spawn(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._spawn(self._serve(reader, writer))

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                cmd = await read_command(reader)
                self.requests.append(cmd)
                self._spawn(self.handler(self, cmd, writer))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
