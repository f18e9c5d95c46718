"""A TCP proxy on loopback that a test can black-hole: connections stay open, bytes vanish both ways.

    with TcpProxy("127.0.0.1", postgres.port) as proxy:
        dsn = postgres.dsn(db).replace(f"port={postgres.port}", f"port={proxy.port}")
        proxy.blackhole()     # the client's packets go nowhere and nothing comes back: no error, no answer
        proxy.restore()       # forwarding again; black-holed connections are reset (their streams are torn)

This is the partition a firewall drop or a dead switch makes, unlike a refused connection: the client
learns nothing until its own timeout. Runs its own event loop in a daemon thread.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future


class TcpProxy:
    """Forwards 127.0.0.1:<port> to an upstream address until told to drop everything."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.port = 0
        self.connections = 0  # accepted so far
        self._holed = False
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="tcp-proxy", daemon=True)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    def __enter__(self) -> TcpProxy:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _call(self, coro) -> object:
        future: Future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return future.result(timeout=10)

    def start(self) -> None:
        """Listen on a free loopback port."""
        self._thread.start()
        self._server = self._call(asyncio.start_server(self._accept, "127.0.0.1", 0))
        self.port = self._server.sockets[0].getsockname()[1]

    def blackhole(self) -> None:
        """From now on, bytes in either direction are read and dropped; new connections are accepted and mute."""
        self._holed = True

    def restore(self) -> None:
        """Forward again; connections that lost bytes are reset, so their clients reconnect cleanly."""
        self._call(self._reset_all())
        self._holed = False

    def stop(self) -> None:
        """Close everything and stop the thread."""
        if self._server is not None:
            self._call(self._close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        if not self._thread.is_alive():
            self._loop.close()

    async def _close(self) -> None:
        assert self._server is not None
        self._server.close()
        await self._reset_all()

    async def _reset_all(self) -> None:
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writers.add(writer)
        if self._holed:
            await self._pump(reader, None)  # a mute connection: no upstream, nothing back
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.transport.abort()
            return
        self._writers.add(up_writer)
        await asyncio.gather(self._pump(reader, up_writer), self._pump(up_reader, writer))

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter | None) -> None:
        try:
            while data := await reader.read(65536):
                if writer is None or self._holed:
                    continue  # into the hole
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            if writer is not None:
                writer.transport.abort()
