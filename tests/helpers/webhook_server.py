"""A local HTTP endpoint for webhook receivers: records each POST, can answer errors on demand.

    with WebhookServer(token="s3cret") as hook:
        hook.url                       # http://127.0.0.1:<port>/alerts
        hook.fail_next(2, status=503, retry_after=1)
        hook.bodies                    # JSON bodies of the accepted POSTs
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class WebhookServer:
    """Threaded HTTP server on 127.0.0.1 accepting POST /alerts."""

    def __init__(self, token: str | None = None) -> None:
        self.token = token
        self.bodies: list[dict[str, Any]] = []
        self.statuses: list[int] = []
        self.keys: list[str | None] = []  # the Idempotency-Key header of each accepted POST
        self._lock = threading.Lock()
        self._failures: list[tuple[int, int | None]] = []
        self._httpd: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        """Where to POST."""
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/alerts"

    def fail_next(self, count: int, status: int = 503, retry_after: int | None = None) -> None:
        """Answer the next `count` POSTs with `status` (and a Retry-After header when given)."""
        with self._lock:
            self._failures = [(status, retry_after)] * count

    def start(self) -> None:
        """Serve on a free loopback port in a daemon thread."""
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True).start()

    def stop(self) -> None:
        """Shut down."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> WebhookServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _answer(self, auth: str | None, body: bytes, key: str | None = None) -> tuple[int, dict[str, str]]:
        with self._lock:
            if self._failures:
                status, retry_after = self._failures.pop(0)
                self.statuses.append(status)
                return status, ({"Retry-After": str(retry_after)} if retry_after is not None else {})
            if self.token is not None and auth != f"Bearer {self.token}":
                self.statuses.append(401)
                return 401, {}
            self.bodies.append(json.loads(body))
            self.keys.append(key)
            self.statuses.append(200)
            return 200, {}


def _handler(server: WebhookServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's hook name)
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            status, headers = server._answer(self.headers.get("Authorization"), body,
                                             self.headers.get("Idempotency-Key"))
            payload = b'{"status":"ok"}' if status == 200 else b'{"error":"refused"}'
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler
