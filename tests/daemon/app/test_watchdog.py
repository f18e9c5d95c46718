"""The watchdog pings systemd's socket while cycles complete and stops when they do not."""

from __future__ import annotations

import socket

import pytest

from daemon.app.watchdog import Watchdog, watchdog_interval
from daemon.common.sdnotify import sd_notify


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def notify_socket(tmp_path, monkeypatch):
    path = tmp_path / "notify.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.settimeout(0.2)
    monkeypatch.setenv("NOTIFY_SOCKET", str(path))
    yield sock
    sock.close()


def received(sock: socket.socket) -> list[str]:
    out = []
    while True:
        try:
            out.append(sock.recv(4096).decode())
        except TimeoutError:
            return out


def test_pings_while_cycles_complete_and_stops_when_they_stall(notify_socket, caplog):
    clock = Clock()
    dog = Watchdog(interval=1, stall_after=60, clock=clock, notify=sd_notify)
    assert dog.tick()
    clock.now += 59
    assert dog.tick()  # start-up counts as progress for stall_after
    clock.now += 2
    assert not dog.tick() and not dog.tick()
    assert received(notify_socket) == ["WATCHDOG=1", "WATCHDOG=1"]
    assert caplog.text.count("withholding WATCHDOG=1") == 1  # logged once, not per tick

    dog.progress()  # a cycle completes again
    assert dog.tick()
    assert received(notify_socket) == ["WATCHDOG=1"]


def test_interval_is_half_of_watchdog_usec_and_only_for_our_pid():
    assert watchdog_interval({"WATCHDOG_USEC": "30000000"}) == 15.0
    assert watchdog_interval({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "1"}, pid=2) is None
    assert watchdog_interval({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "2"}, pid=2) == 15.0
    assert watchdog_interval({}) is None
    assert watchdog_interval({"WATCHDOG_USEC": "soon"}) is None
