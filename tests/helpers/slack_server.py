"""A local stand-in for the Slack Web API (chat.postMessage, chat.update, conversations.history and
.replies with message metadata, conversations.list) that records every call.

    with SlackServer(token="xoxb-test") as slack:
        AsyncWebClient(token="xoxb-test", base_url=slack.base_url)   # base_url ends in /api/
        slack.rate_limit_next(1, retry_after=1)    # next call: 429 + Retry-After: 1
        slack.fail_next(2, error="internal_error", status=500)
        slack.calls_to("chat.postMessage")
        slack.messages[ts]                         # current state of a top-level message (its metadata too)
    SlackServer(..., scopes=("chat:write",)) answers conversations.* with missing_scope, as Slack does for
    a bot token without channels:history (channels:read for conversations.list, which lists CHANNEL_NAME
    among `other_channels` others, a page of at most `limit`); SlackServer(..., clock=f) stamps messages' ts with f() (seconds).
    SlackServer(..., app_token="xapp-test", socket_url=socket.url) also answers apps.connections.open.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl

CHANNEL_ID = "C0ALERTS"
CHANNEL_NAME = "rocketmq-alerts"  # CHANNEL_ID's name, as conversations.list gives it (no #)
BOT_ID, APP_ID = "B0ROCKET", "A0ROCKET"
ALL_SCOPES = ("chat:write", "files:write", "channels:history", "groups:history", "channels:read", "groups:read")
# The scope each read method needs for CHANNEL_ID, a public channel (a private one would need groups:history).
_NEEDS = {"conversations.history": "channels:history", "conversations.replies": "channels:history",
          "conversations.list": "channels:read"}


@dataclass
class Call:
    """One request the server answered (rate-limited and failed ones included)."""

    method: str
    args: dict[str, Any]
    authorization: str | None
    status: int


@dataclass
class _Plan:
    rate_limited: int = 0
    retry_after: int = 1
    hangs: int = 0
    hang_seconds: float = 0.0
    failures: int = 0
    fail_status: int = 200
    fail_error: str = "internal_error"


@dataclass
class SlackServer:
    """Threaded HTTP server answering Slack's chat API on 127.0.0.1."""

    token: str | None = None
    app_token: str | None = None  # apps.connections.open wants this one (Socket Mode)
    socket_url: str | None = None  # what apps.connections.open answers (tests/helpers/slack_socket.py)
    # Several daemons, each its own Socket Mode stand-in: app token -> URL (a click goes to the one chosen).
    socket_urls: dict[str, str] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    messages: dict[str, dict[str, Any]] = field(default_factory=dict)
    replies: list[dict[str, Any]] = field(default_factory=list)
    uploads: list[dict[str, Any]] = field(default_factory=list)  # completed file uploads (bytes in "content")
    scopes: tuple[str, ...] = ALL_SCOPES  # what the bot token was granted
    clock: Callable[[], float] | None = None  # a message's ts (seconds); None: a counter from 1_700_000_000
    other_channels: int = 0  # channels conversations.list gives before CHANNEL_NAME (a big workspace)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._plan = _Plan()
        self._ts = 1_700_000_000
        self._last_ts = 0.0
        self._files: dict[str, dict[str, Any]] = {}
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """What to pass as slack-sdk's base_url."""
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/api/"

    def rate_limit_next(self, count: int, retry_after: int = 1) -> None:
        """Answer the next `count` calls with 429 and a Retry-After header."""
        with self._lock:
            self._plan.rate_limited, self._plan.retry_after = count, retry_after

    def hang_next(self, count: int, seconds: float) -> None:
        """Hold the next `count` calls for `seconds`, then fail them with 500 without acting on them."""
        with self._lock:
            self._plan.hangs, self._plan.hang_seconds = count, seconds

    def fail_next(self, count: int, error: str = "internal_error", status: int = 200) -> None:
        """Answer the next `count` calls with `{"ok": false, "error": error}` (status 200 or e.g. 500)."""
        with self._lock:
            self._plan.failures, self._plan.fail_error, self._plan.fail_status = count, error, status

    def calls_to(self, method: str, answered: bool = True) -> list[Call]:
        """Calls of one API method; by default only those answered 200 ok."""
        with self._lock:
            return [c for c in self.calls if c.method == method and (c.status == 200 or not answered)]

    def start(self) -> None:
        """Serve on a free loopback port in a daemon thread."""
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Shut the server down."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> SlackServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def history(self) -> list[dict[str, Any]]:
        """Every message as conversations.history and .replies see it, oldest first."""
        with self._lock:
            return sorted(self._stored(), key=lambda m: float(m["ts"]))

    # ---- request handling (server thread) -------------------------------------------------------

    def _next_ts(self) -> str:
        if self.clock is None:
            self._ts += 1
            return f"{self._ts}.000100"
        # Slack's ts are unique per channel: two posts within a microsecond still differ.
        now = max(self.clock(), self._last_ts + 1e-6)
        self._last_ts = now
        return f"{now:.6f}"

    def _stored(self) -> list[dict[str, Any]]:
        # What Slack keeps of a posted message: its fields, the bot that posted it, its metadata.
        out = []
        for m in [*self.messages.values(), *self.replies]:
            kept = {k: v for k, v in m.items() if k in ("text", "blocks", "attachments", "thread_ts", "ts",
                                                        "metadata", "reply_broadcast")}
            out.append({"type": "message", "bot_id": BOT_ID, "app_id": APP_ID, **kept})
        return out

    def _read(self, method: str, args: dict[str, Any]) -> dict[str, Any]:
        # conversations.history: top-level messages (and replies broadcast to the channel), newest first;
        # conversations.replies: a thread's parent then its replies, oldest first. Both page by cursor and
        # leave `metadata` out unless include_all_metadata is set, as Slack does.
        if args.get("channel") != CHANNEL_ID:
            return {"ok": False, "error": "channel_not_found"}
        oldest, latest = float(args.get("oldest") or 0), float(args.get("latest") or "inf")
        inclusive = str(args.get("inclusive", "")).lower() in ("1", "true")

        def within(m: dict[str, Any]) -> bool:
            ts = float(m["ts"])
            return (oldest <= ts <= latest) if inclusive else (oldest < ts < latest)

        stored = self._stored()
        if method == "conversations.history":
            found = sorted((m for m in stored if within(m) and (not m.get("thread_ts") or m.get("reply_broadcast"))),
                           key=lambda m: float(m["ts"]), reverse=True)
        else:
            parent = next((m for m in stored if m["ts"] == args.get("ts") and not m.get("thread_ts")), None)
            if parent is None:
                return {"ok": False, "error": "thread_not_found"}
            found = [parent] + sorted((m for m in stored if m.get("thread_ts") == parent["ts"] and within(m)),
                                      key=lambda m: float(m["ts"]))
        if str(args.get("include_all_metadata", "")).lower() not in ("1", "true"):
            found = [{k: v for k, v in m.items() if k != "metadata"} for m in found]
        start, limit = int(args.get("cursor") or 0), int(args.get("limit") or 100)
        page, more = found[start:start + limit], start + limit < len(found)
        return {"ok": True, "messages": page, "has_more": more,
                "response_metadata": {"next_cursor": str(start + limit) if more else ""}}

    def _list(self, args: dict[str, Any]) -> dict[str, Any]:
        # The workspace's channels by cursor pages, ours last: a lookup must page to find it.
        names = [f"team-{i:05d}" for i in range(self.other_channels)] + [CHANNEL_NAME]
        channels = [{"id": CHANNEL_ID if n == CHANNEL_NAME else f"C{i:07d}", "name": n, "is_private": False}
                    for i, n in enumerate(names)]
        start, limit = int(args.get("cursor") or 0), int(args.get("limit") or 100)
        more = start + limit < len(channels)
        return {"ok": True, "channels": channels[start:start + limit],
                "response_metadata": {"next_cursor": str(start + limit) if more else ""}}

    def _answer(self, method: str, args: dict[str, Any], auth: str | None) -> tuple[int, dict, dict]:
        with self._lock:
            plan = self._plan
            if plan.rate_limited > 0:
                plan.rate_limited -= 1
                self.calls.append(Call(method, args, auth, 429))
                return 429, {"Retry-After": str(plan.retry_after)}, {"ok": False, "error": "ratelimited"}
            if plan.failures > 0:
                plan.failures -= 1
                self.calls.append(Call(method, args, auth, plan.fail_status))
                return plan.fail_status, {}, {"ok": False, "error": plan.fail_error}
            self.calls.append(Call(method, args, auth, 200))
            if method == "apps.connections.open":
                url = self.socket_urls.get((auth or "").removeprefix("Bearer "))
                if url is None and self.socket_url is not None and auth == f"Bearer {self.app_token}":
                    url = self.socket_url
                if url is None:
                    return 200, {}, {"ok": False, "error": "invalid_auth"}
                return 200, {}, {"ok": True, "url": url}
            if self.token is not None and auth != f"Bearer {self.token}":
                return 200, {}, {"ok": False, "error": "invalid_auth"}
            if method in _NEEDS and _NEEDS[method] not in self.scopes:
                return 200, {}, {"ok": False, "error": "missing_scope", "needed": _NEEDS[method],
                                 "provided": ",".join(self.scopes)}
            if method in ("conversations.history", "conversations.replies"):
                return 200, {}, self._read(method, args)
            if method == "conversations.list":
                return 200, {}, self._list(args)
            if method == "chat.postMessage":
                ts = self._next_ts()
                message = {**args, "ts": ts}
                if args.get("thread_ts"):
                    self.replies.append(message)
                else:
                    self.messages[ts] = message
                return 200, {}, {"ok": True, "channel": CHANNEL_ID, "ts": ts, "message": message}
            if method == "files.getUploadURLExternal":
                file_id = f"F{len(self._files) + 1:04d}"
                self._files[file_id] = {"filename": args.get("filename"), "length": int(args.get("length") or 0)}
                port = self._httpd.server_address[1] if self._httpd else 0
                return 200, {}, {"ok": True, "file_id": file_id,
                                 "upload_url": f"http://127.0.0.1:{port}/upload/{file_id}"}
            if method == "files.completeUploadExternal":
                files = args.get("files")
                files = json.loads(files) if isinstance(files, str) else files or []
                done = []
                for f in files:
                    stored = self._files.get(f.get("id"), {})
                    if "content" not in stored:
                        return 200, {}, {"ok": False, "error": "file_not_uploaded"}
                    upload = {**stored, "id": f["id"], "title": f.get("title"), "channel_id": args.get("channel_id"),
                              "thread_ts": args.get("thread_ts"), "initial_comment": args.get("initial_comment")}
                    self.uploads.append(upload)
                    done.append({"id": f["id"], "title": f.get("title")})
                return 200, {}, {"ok": True, "files": done}
            if method == "chat.update":
                ts = args.get("ts", "")
                if ts not in self.messages:
                    return 200, {}, {"ok": False, "error": "message_not_found"}
                self.messages[ts] = {**self.messages[ts], **args}
                return 200, {}, {"ok": True, "channel": CHANNEL_ID, "ts": ts, "text": args.get("text", "")}
            return 200, {}, {"ok": False, "error": "unknown_method"}


def _handler_for(server: SlackServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (slack-sdk reads conversations.* with GET and a query string)
            self.do_POST()

        def do_POST(self) -> None:  # noqa: N802 (http.server's hook name)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            if self.path.startswith("/upload/"):  # step 2 of files.upload_v2: the raw bytes
                with server._lock:
                    server._files.setdefault(self.path.rsplit("/", 1)[-1], {})["content"] = body
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"OK")
                return
            raw = body.decode()
            if "json" in (self.headers.get("Content-Type") or ""):
                args = json.loads(raw or "{}")
            else:
                args = dict(parse_qsl(raw))
            if "?" in self.path:  # slack-sdk sends some methods' arguments in the query string
                args = {**dict(parse_qsl(self.path.split("?", 1)[1])), **args}
            for key in ("blocks", "attachments", "metadata"):  # form bodies carry these JSON-encoded
                if isinstance(args.get(key), str):
                    args[key] = json.loads(args[key])
            method = self.path.split("/api/", 1)[-1].split("?")[0]
            with server._lock:
                hang = server._plan.hangs > 0
                if hang:
                    server._plan.hangs -= 1
                    server.calls.append(Call(method, args, self.headers.get("Authorization"), 0))
            if hang:  # the caller may be gone (killed) by the time this answers
                time.sleep(server._plan.hang_seconds)
                status, headers, body = 500, {}, {"ok": False, "error": "internal_error"}
            else:
                status, headers, body = server._answer(method, args, self.headers.get("Authorization"))
            try:
                payload = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client went away (a killed daemon): nobody to answer

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

    return Handler
