"""Headless Chromium driven over the DevTools protocol (a websocket, via aiohttp): load, act, screenshot.

Tests use Debian's `chromium` (installed by .ci/run when missing); `chromium_path()` is None without it.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import shutil
import time
from pathlib import Path
from typing import Any

import aiohttp


def chromium_path() -> str | None:
    """The Chromium binary on PATH, or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


class DevToolsError(AssertionError):
    """Chromium answered a command with an error, or did not answer in time."""


class Chromium:
    """One headless Chromium with one page; `async with Chromium(tmp) as page:` then navigate/evaluate."""

    def __init__(self, workdir: Path, width: int = 1280, height: int = 1400) -> None:
        self.workdir = workdir
        self.size = (width, height)
        self.events: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._new_event = asyncio.Event()
        self._proc: asyncio.subprocess.Process | None = None
        self._http: aiohttp.ClientSession | None = None
        self._ws: aiohttp.ClientWebSocketResponse | None = None
        self._reader: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Chromium:
        binary = chromium_path()
        if binary is None:
            raise RuntimeError("chromium is not installed (apt-get install -y chromium)")
        profile = self.workdir / "chromium-profile"
        profile.mkdir(parents=True, exist_ok=True)
        self._log = (self.workdir / "chromium.log").open("wb")
        self._proc = await asyncio.create_subprocess_exec(
            binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--no-default-browser-check", "--disable-extensions", "--remote-debugging-port=0",
            f"--user-data-dir={profile}", f"--window-size={self.size[0]},{self.size[1]}", "about:blank",
            stdout=self._log, stderr=self._log,
        )
        port = await self._devtools_port(profile / "DevToolsActivePort")
        self._http = aiohttp.ClientSession()
        async with self._http.get(f"http://127.0.0.1:{port}/json/list") as r:
            targets = await r.json()
        page = next(t for t in targets if t["type"] == "page")
        self._ws = await self._http.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0)
        self._reader = asyncio.create_task(self._read())
        for domain in ("Page.enable", "Runtime.enable", "Log.enable"):
            await self.send(domain)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._ws is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.send("Browser.close"), 5)
            await self._ws.close()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        if self._http is not None:
            await self._http.close()
        if self._proc is not None:
            if self._proc.returncode is None:
                self._proc.terminate()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._proc.wait(), 10)
            if self._proc.returncode is None:
                self._proc.kill()
                await self._proc.wait()
        self._log.close()

    async def _devtools_port(self, port_file: Path, timeout: float = 30.0) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc is not None and self._proc.returncode is not None:
                raise RuntimeError(f"chromium exited {self._proc.returncode}; see {self.workdir / 'chromium.log'}")
            text = port_file.read_text() if port_file.exists() else ""
            if text.strip():
                return int(text.splitlines()[0])
            await asyncio.sleep(0.05)
        raise RuntimeError(f"chromium did not open its DevTools port within {timeout:.0f}s")

    async def _read(self) -> None:
        assert self._ws is not None
        async for message in self._ws:
            if message.type != aiohttp.WSMsgType.TEXT:
                continue
            data = json.loads(message.data)
            if "id" in data and data["id"] in self._pending:
                self._pending.pop(data["id"]).set_result(data)
            elif "method" in data:
                self.events.append(data)
                self._new_event.set()

    async def send(self, method: str, params: dict[str, Any] | None = None, timeout: float = 30.0) -> dict[str, Any]:
        """Run one DevTools command and return its result."""
        assert self._ws is not None
        command_id = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[command_id] = future
        await self._ws.send_str(json.dumps({"id": command_id, "method": method, "params": params or {}}))
        try:
            answer = await asyncio.wait_for(future, timeout)
        except TimeoutError:
            raise DevToolsError(f"{method}: no answer from chromium within {timeout:.0f}s") from None
        if "error" in answer:
            raise DevToolsError(f"{method}: {answer['error']}")
        return answer.get("result", {})

    async def wait_for(self, method: str, after: int, timeout: float = 30.0) -> dict[str, Any]:
        """The first `method` event recorded after event number `after` (see `mark`)."""
        deadline = time.monotonic() + timeout
        while True:
            for event in self.events[after:]:
                if event["method"] == method:
                    return event
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise DevToolsError(f"no {method} event within {timeout:.0f}s")
            self._new_event.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._new_event.wait(), remaining)

    def mark(self) -> int:
        """A position in the event list, to wait for what happens after it."""
        return len(self.events)

    async def navigate(self, url: str) -> None:
        """Load `url` and wait for its load event."""
        mark = self.mark()
        result = await self.send("Page.navigate", {"url": url})
        if result.get("errorText"):
            raise DevToolsError(f"loading {url}: {result['errorText']}")
        await self.wait_for("Page.loadEventFired", mark)

    async def evaluate(self, expression: str) -> Any:
        """Evaluate JavaScript in the page and return its value (JSON-serialisable)."""
        result = await self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                      "awaitPromise": True})
        if "exceptionDetails" in result:
            raise DevToolsError(f"javascript failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def screenshot(self, path: Path) -> Path:
        """Write a PNG of the whole page to `path`."""
        result = await self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
        path.write_bytes(base64.b64decode(result["data"]))
        return path

    def console_errors(self) -> list[str]:
        """Console errors, uncaught exceptions and failed loads the page produced so far."""
        errors = []
        for event in self.events:
            params = event.get("params", {})
            if event["method"] == "Runtime.consoleAPICalled" and params.get("type") == "error":
                errors.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params["args"]))
            elif event["method"] == "Runtime.exceptionThrown":
                errors.append(json.dumps(params.get("exceptionDetails", {}))[:500])
            elif event["method"] == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                entry = params["entry"]
                errors.append(f"{entry.get('source')}: {entry.get('text')} {entry.get('url', '')}")
        return errors
