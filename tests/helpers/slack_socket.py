"""A local stand-in for Slack's Socket Mode websocket: sends interactive envelopes, collects acks.

    with SlackSocketServer() as socket, SlackServer(token=..., app_token=..., socket_url=socket.url):
        socket.wait_connected()
        ack = socket.send_interactive(payload)     # the client's {"envelope_id": ...} answer
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from typing import Any

from aiohttp import WSMsgType, web


class SlackSocketServer:
    """aiohttp websocket server on 127.0.0.1 in its own thread and event loop."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None
        self._ws: web.WebSocketResponse | None = None
        self._connected = threading.Event()
        self._acks: dict[str, asyncio.Future] = {}
        self.port = 0
        self.connections = 0

    @property
    def url(self) -> str:
        """What apps.connections.open should answer."""
        return f"ws://127.0.0.1:{self.port}/link"

    def start(self) -> None:
        """Serve on a free loopback port."""
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)

    def stop(self) -> None:
        """Close the connection and the server."""
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def __enter__(self) -> SlackSocketServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def wait_connected(self, timeout: float = 10.0) -> None:
        """Block until a client has opened the websocket."""
        if not self._connected.wait(timeout):
            raise TimeoutError("no Socket Mode client connected")

    def send_interactive(self, payload: dict[str, Any], timeout: float = 10.0) -> dict[str, Any]:
        """Send one interactive envelope and return the client's acknowledgement."""
        envelope_id = str(uuid.uuid4())
        envelope = {"envelope_id": envelope_id, "type": "interactive", "payload": payload,
                    "accepts_response_payload": False}
        return asyncio.run_coroutine_threadsafe(self._send(envelope_id, envelope), self._loop).result(timeout)

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_get("/link", self._link)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def _send(self, envelope_id: str, envelope: dict[str, Any]) -> dict[str, Any]:
        assert self._ws is not None, "no client connected"
        future = self._loop.create_future()
        self._acks[envelope_id] = future
        await self._ws.send_str(json.dumps(envelope))
        return await future

    async def _link(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self._ws = ws
        self.connections += 1
        await ws.send_str(json.dumps({"type": "hello", "num_connections": 1,
                                      "connection_info": {"app_id": "A0ROCKETWATCH"}}))
        self._connected.set()
        async for message in ws:
            if message.type != WSMsgType.TEXT:
                continue
            data = json.loads(message.data)
            future = self._acks.pop(data.get("envelope_id", ""), None)
            if future is not None and not future.done():
                future.set_result(data)
        return ws
