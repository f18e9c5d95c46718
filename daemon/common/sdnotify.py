"""systemd's notify protocol (READY=1, STATUS=, WATCHDOG=1) over $NOTIFY_SOCKET, without a library."""

from __future__ import annotations

import os
import socket


def sd_notify(*states: str) -> bool:
    """Send state lines to systemd; returns False when not run under a notify-type unit."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):  # abstract namespace socket
        address = "\0" + address[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect(address)
            sock.sendall("\n".join(states).encode())
        except OSError:
            return False
    return True
