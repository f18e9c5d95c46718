"""A real SMTP server on 127.0.0.1 (aiosmtpd) that keeps what it receives, for notifier tests.

    with SmtpServer() as smtp:            # started on a free port
        ...send to smtp.host, smtp.port...
        smtp.messages[0]["Subject"]
        smtp.stop()                       # now connections are refused
        smtp.start()                      # same port again
"""

from __future__ import annotations

import email
import email.policy
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from email.message import EmailMessage

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class Received:
    """One accepted mail: the envelope and the parsed message."""

    mail_from: str
    rcpt_tos: list[str]
    message: EmailMessage


class _Handler:
    def __init__(self, server: SmtpServer) -> None:
        self.server = server

    async def handle_DATA(self, server, session, envelope) -> str:  # noqa: N802 (aiosmtpd's hook name)
        message = email.message_from_bytes(envelope.original_content, policy=email.policy.default)
        with self.server._lock:
            self.server.received.append(Received(envelope.mail_from, list(envelope.rcpt_tos), message))
        return "250 OK"


class SmtpServer:
    """aiosmtpd Controller wrapper: start/stop on a fixed port, optional STARTTLS or implicit TLS, AUTH."""

    def __init__(
        self,
        port: int | None = None,
        tls_context: ssl.SSLContext | None = None,
        credentials: tuple[str, str] | None = None,
        implicit_tls: bool = False,
    ) -> None:
        self.host = "127.0.0.1"
        self.port = port or free_port()
        self.tls_context = tls_context
        self.credentials = credentials
        self.implicit_tls = implicit_tls  # TLS from the first byte (port 465 style) instead of STARTTLS
        self.received: list[Received] = []
        self._lock = threading.Lock()
        self._controller: Controller | None = None

    @property
    def messages(self) -> list[EmailMessage]:
        """Parsed messages received so far, in order."""
        with self._lock:
            return [r.message for r in self.received]

    def start(self) -> None:
        """Listen (again) on the same port."""
        kwargs: dict = {}
        if self.tls_context is not None and self.implicit_tls:
            kwargs.update(ssl_context=self.tls_context)
        elif self.tls_context is not None:
            kwargs.update(tls_context=self.tls_context, require_starttls=True)
        if self.credentials is not None:
            kwargs.update(authenticator=self._authenticate, auth_require_tls=self.tls_context is not None)
        self._controller = Controller(_Handler(self), hostname=self.host, port=self.port, **kwargs)
        self._controller.start()

    def stop(self) -> None:
        """Stop listening; clients now get connection refused."""
        if self._controller is not None:
            self._controller.stop()
            self._controller = None

    def wait_for(self, count: int, timeout: float = 5.0) -> list[EmailMessage]:
        """Wait until `count` messages arrived (delivery is on the server's thread)."""
        deadline = time.monotonic() + timeout
        while len(self.messages) < count and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.messages

    def _authenticate(self, server, session, envelope, mechanism, auth_data) -> AuthResult:
        ok = isinstance(auth_data, LoginPassword) and (
            auth_data.login.decode(), auth_data.password.decode()
        ) == self.credentials
        return AuthResult(success=ok, handled=False)  # handled=False: aiosmtpd answers 535 itself

    def __enter__(self) -> SmtpServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
