"""SIGHUP reload: a bad rule file keeps the old rules running; a good one replaces them whole."""

from __future__ import annotations

from pathlib import Path

from config.loader import load_config
from daemon.app import Daemon

RULE = """\
groups:
  - name: mine
    rules:
      - alert: BigCache
        kind: threshold
        table: process_queue
        value: cached_msg_count
        above: {{warning: {limit}}}
        summary: "{{group}} caches {{value}}"
        diagnosis: "slow consumer"
        next_steps: "look at consumeRT"
"""


def _setup(tmp_path: Path) -> tuple[Path, Path]:
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULE.format(limit=500))
    config = tmp_path / "rocketwatch.yaml"
    config.write_text(
        f'clusters: [{{name: c, namesrv: ["127.0.0.1:9876"]}}]\nstate_dir: {tmp_path / "state"}\n'
        f"rules: [builtin, {rules}]\n"
    )
    return config, rules


def test_bad_rules_on_reload_keep_the_old_ones(tmp_path, caplog):
    config, rules = _setup(tmp_path)
    daemon = Daemon(load_config(config), config)
    before = daemon.rulebook
    assert {"ProcessQueueSpanTooLong", "BigCache"} <= set(before.timings)

    rules.write_text(RULE.format(limit=500).replace("cached_msg_count", "cached_msg_cnt"))
    daemon.reload()
    assert daemon.rulebook is before
    assert "reload rejected" in caplog.text and "cached_msg_cnt" in caplog.text

    rules.write_text(RULE.format(limit=900))
    daemon.reload()
    assert daemon.rulebook is not before
    big = next(r for r in daemon.rulebook.rules if r.alert == "BigCache")
    assert big.above.warning.source == "900"
