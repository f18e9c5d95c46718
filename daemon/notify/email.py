"""Email through SMTP (aiosmtplib): multipart text + HTML, one thread of mails per alert group."""

from __future__ import annotations

from email.message import EmailMessage
from email.utils import format_datetime, make_msgid

import aiosmtplib

from daemon.alerts.figures import RuleLookup
from daemon.notify import render
from daemon.notify.errors import DeliveryError
from daemon.notify.model import Notification, ThreadRef


class EmailNotifier:
    """Sends one mail per notification; later mails of a group reply to the group's first one."""

    def __init__(
        self,
        name: str,
        host: str,
        port: int,
        from_addr: str,
        to: list[str],
        security: str = "starttls",
        username: str | None = None,
        password: str | None = None,
        timeout: float = 30.0,
        cert_bundle: str | None = None,
        rules: RuleLookup | None = None,
        external_url: str = "",
        detail: str = "full",
    ) -> None:
        if security not in ("none", "starttls", "tls"):
            raise ValueError(f"receiver {name!r}: security must be none, starttls or tls, not {security!r}")
        self.name = name
        self.host, self.port = host, port
        self.from_addr, self.to = from_addr, list(to)
        self.security = security
        self.username = username
        self._password = password
        self.timeout = timeout
        self.cert_bundle = cert_bundle
        self.rules = rules  # alert name -> rule, so figures read as the rule defines them
        self.external_url = external_url  # the status page's address: the incident link
        self.detail = detail

    def __repr__(self) -> str:
        return f"EmailNotifier(name={self.name!r}, host={self.host!r}, port={self.port})"  # never the password

    def build(self, notification: Notification, thread: ThreadRef | None) -> EmailMessage:
        """The mail for a notification: headers, a text part and an HTML alternative."""
        msg = EmailMessage()
        msg["Subject"] = render.subject(notification)
        msg["From"] = self.from_addr
        msg["To"] = ", ".join(self.to)
        msg["Date"] = format_datetime(notification.created_at)
        msg["Message-ID"] = self._message_id(notification)
        if thread is not None:
            # Mail clients thread on these: every later mail of the group answers the first one.
            msg["In-Reply-To"] = thread.id
            msg["References"] = thread.id
        msg["X-Rocketwatch-Group"] = notification.group_key
        msg.set_content(render.text(notification, self.rules, self.external_url, self.detail))
        msg.add_alternative(render.html_body(notification, self.rules, self.external_url, self.detail), subtype="html")
        return msg

    async def send(self, notification: Notification, thread: ThreadRef | None) -> ThreadRef | None:
        """Send the mail; the group's thread is the Message-ID of its first mail."""
        msg = self.build(notification, thread)
        try:
            await self._deliver(msg)
        except aiosmtplib.SMTPResponseException as exc:
            # 5xx: the server refuses for good (auth, sender, recipients); 4xx: try again later.
            raise DeliveryError(f"SMTP {self.host}:{self.port} answered {exc.code} {exc.message}",
                                retryable=exc.code < 500) from None
        except aiosmtplib.SMTPRecipientsRefused as exc:
            raise DeliveryError(f"SMTP {self.host}:{self.port} refused every recipient: {exc}", retryable=False) from None
        except (aiosmtplib.SMTPException, OSError, TimeoutError) as exc:
            raise DeliveryError(f"SMTP {self.host}:{self.port}: {type(exc).__name__}: {exc}", retryable=True) from None
        return thread or ThreadRef(id=msg["Message-ID"])

    async def _deliver(self, msg: EmailMessage) -> None:
        await aiosmtplib.send(
            msg,
            hostname=self.host,
            port=self.port,
            username=self.username,
            password=self._password,
            use_tls=self.security == "tls",
            # False, not None: None would let aiosmtplib upgrade opportunistically, and "none" means none.
            start_tls=self.security == "starttls",
            timeout=self.timeout,
            cert_bundle=self.cert_bundle,
        )

    def _message_id(self, notification: Notification) -> str:
        domain = self.from_addr.rpartition("@")[2] or "rocketwatch.invalid"
        if notification.idempotency_key:
            # Stable across retries of the same outbox row, so a resend after a crash is recognisable.
            return f"<{notification.idempotency_key}.rocketwatch@{domain}>"
        return make_msgid("rocketwatch", domain=domain)
