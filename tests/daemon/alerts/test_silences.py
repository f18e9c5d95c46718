"""Silences as the on-call person manages them: matchers, windows, the CLI against a live state file."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from config.matchers import parse_matcher
from daemon.alerts.db import StateDB
from daemon.alerts.silences import SilenceStore
from daemon.cli import main

T0 = datetime(2026, 11, 22, 3, 0, tzinfo=UTC)


def test_matchers_read_like_alertmanager():
    labels = {"alertname": "ConsumeDelayHigh", "group": "orders", "severity": "critical"}
    assert parse_matcher('group="orders"').matches(labels)
    assert parse_matcher("group!=billing").matches(labels)
    assert parse_matcher('severity=~"warning|critical"').matches(labels)
    assert not parse_matcher('alertname!~"Consume.*"').matches(labels)
    assert not parse_matcher('group=~"ord"').matches(labels)  # whole value, as in Prometheus
    assert parse_matcher('topic=""').matches(labels)  # a missing label is the empty string
    with pytest.raises(ValueError, match="cannot read matcher 'group'"):
        parse_matcher("group")
    with pytest.raises(ValueError, match="invalid regex"):
        parse_matcher('group=~"("')


def test_silence_window_and_expiry(tmp_path):
    db = StateDB(tmp_path / "state.db")
    store = SilenceStore(db)
    s = store.add(['group="orders"'], T0 + timedelta(minutes=5), T0 + timedelta(hours=1), "ana", "deploy", T0)
    labels = {"group": "orders"}
    assert s.state(T0) == "pending" and not s.mutes(labels, T0)
    assert s.mutes(labels, T0 + timedelta(minutes=6))
    expired = store.expire(s.id, T0 + timedelta(minutes=10))
    assert expired.state(T0 + timedelta(minutes=10)) == "expired" and not store.active(T0 + timedelta(minutes=10))
    with pytest.raises(KeyError, match="no silence with id 'nope'"):
        store.expire("nope", T0)
    with pytest.raises(ValueError, match="ends .* before it starts"):
        store.add(['group="x"'], T0, T0, "ana", "c", T0)
    with pytest.raises(ValueError, match="say who silences and why"):
        store.add(['group="x"'], T0, T0 + timedelta(hours=1), "ana", " ", T0)
    db.close()


def test_cli_add_list_expire_on_the_daemons_state_dir(tmp_path, capsys):
    StateDB(tmp_path / "state.db").close()  # the daemon created it
    base = ["silence", "--state-dir", str(tmp_path)]
    assert main([*base, "add", 'group="orders"', 'alertname=~"Consume.*"', "-d", "30m", "-a", "ana", "-m", "deploy 4.2"]) == 0
    silence_id = capsys.readouterr().out.split()[1]
    assert main([*base, "list", "--format", "json"]) == 0
    [listed] = json.loads(capsys.readouterr().out)
    assert listed["id"] == silence_id and listed["state"] == "active"
    assert listed["matchers"] == ['group="orders"', 'alertname=~"Consume.*"'] and listed["comment"] == "deploy 4.2"
    assert main([*base, "expire", silence_id]) == 0
    assert main([*base, "list"]) == 0
    assert silence_id not in capsys.readouterr().out.split("expired")[-1]
    assert main([*base, "add", "group", "-m", "x", "-a", "ana"]) == 2
    assert "cannot read matcher 'group'" in capsys.readouterr().err
