"""Helpers for the collector tests: the real 4.9.7 captures (fixtures/rocketmq-4.9.7/wire)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from daemon.collectors.remoting import frame
from tests.fixtures_path import WIRE


def wire_path(name: str) -> Path:
    """Path of a capture file; the captures are required (../shared/fixtures beside the checkout)."""
    path = WIRE / name
    assert path.exists(), f"fixture {path} missing: set ROCKETWATCH_FIXTURES to the shared fixtures dir"
    return path


def response(name: str) -> frame.RemotingCommand:
    """The decoded response frame `<name>.frame`."""
    return frame.decode(wire_path(f"{name}.frame").read_bytes())


def body(name: str) -> bytes:
    """The body of the response frame `<name>.frame`."""
    return response(name).body


def meta(name: str) -> Any:
    """A capture's JSON side file (`<name>.json`, or a plain json like t1_clientIds.json)."""
    path = wire_path(name if name.endswith(".json") else f"{name}.json")
    return json.loads(path.read_text())
