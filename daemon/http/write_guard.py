"""Who may write (silences) and from where: loopback or a bearer token, and never a cross-site request."""

from __future__ import annotations

import hmac
import ipaddress
from urllib.parse import urlsplit

from aiohttp import web
from pydantic import SecretStr

LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1", "[::1]"}


class WriteRefused(Exception):
    """A write the guard turned down; `status` is the HTTP status to answer with."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def _is_loopback(remote: str | None) -> bool:
    if not remote:
        return False
    try:
        return ipaddress.ip_address(remote.split("%")[0]).is_loopback
    except ValueError:
        return False


def _bearer(request: web.Request) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def _token_ok(given: str | None, token: SecretStr) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), token.get_secret_value().encode())


def _same_origin(request: web.Request) -> bool | None:
    """True/False when Origin (or else Referer) says where the request comes from; None when neither is sent."""
    own = (request.scheme, request.host.lower())
    origin = request.headers.get("Origin")
    if origin and origin != "null":
        parts = urlsplit(origin)
        return (parts.scheme, parts.netloc.lower()) == own
    if origin == "null":
        return False  # sandboxed frames and some redirects: never trusted
    referer = request.headers.get("Referer")
    if referer:
        parts = urlsplit(referer)
        return (parts.scheme, parts.netloc.lower()) == own
    return None


def _host_is_local(request: web.Request, listen_host: str) -> bool:
    # A DNS-rebinding page reaches us under its own name; a loopback-only write must name us by address.
    host = request.host.lower()
    name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    return name in LOOPBACK_NAMES or name == listen_host.lower()


def check_write(request: web.Request, token: SecretStr | None, listen_host: str, form_token: str | None) -> None:
    """Raise WriteRefused unless the client may write and the request is not cross-site.

    With a token configured, a write carries it (Authorization: Bearer, or the form's `token` field).
    Without one, only loopback clients write. Either way a request whose Origin/Referer names another
    site is refused, and a browser form without the token must prove it comes from this page.
    """
    origin = _same_origin(request)
    if origin is False:
        raise WriteRefused(403, "cross-site request refused: Origin/Referer is not this status page")
    if token is not None:
        if not (_token_ok(_bearer(request), token) or _token_ok(form_token, token)):
            raise WriteRefused(401, "this write needs the token configured in http.token "
                                    "(Authorization: Bearer <token>, or the page's token field)")
        return
    if not _is_loopback(request.remote):
        raise WriteRefused(403, f"writes are accepted from loopback only (client {request.remote}); "
                                "configure http.token to allow remote writes")
    if not _host_is_local(request, listen_host):
        raise WriteRefused(403, f"write addressed to host {request.host!r}: use the daemon's own address")
    if form_token is not None and origin is None:
        # A form post without Origin or Referer cannot prove it came from this page.
        raise WriteRefused(403, "form post without Origin or Referer refused (cross-site protection)")
