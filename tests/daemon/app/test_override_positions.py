"""A rule_overrides mistake reads the same wherever the config is used: `run`, a reload and
`eval --config` name file:line:col and `rule_overrides.<rule>.<field>`, as `check` does."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from config.loader import load_config
from daemon.app.daemon import Daemon
from daemon.cli import main

CONFIG = textwrap.dedent(
    """\
    clusters: [{{name: c, namesrv: ["127.0.0.1:9876"]}}]
    state_dir: {state}
    store_path: {store}
    rule_overrides:
      ProcessQueueSpanTooLong:
        for: 10m{bad}
    """
)
BAD = '\n    exclude:\n      group: "test-(.*"'


def _config(tmp_path: Path, bad: str = BAD) -> Path:
    (tmp_path / "store").mkdir(exist_ok=True)
    path = tmp_path / "rocketwatch.yaml"
    path.write_text(CONFIG.format(state=tmp_path / "state", store=tmp_path / "store", bad=bad))
    return path


def _said(path: Path) -> str:
    return f"{path}:8:7: rule_overrides.ProcessQueueSpanTooLong.exclude.group: invalid regex 'test-(.*'"


def test_run_names_file_line_and_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _config(tmp_path)
    assert main(["run", "--config", str(path)]) == 1
    assert capsys.readouterr().err.startswith(_said(path))


def test_eval_with_config_names_file_line_and_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _config(tmp_path)
    assert main(["eval", "--config", str(path)]) == 2
    assert capsys.readouterr().err.startswith(f"rocketwatch eval: {_said(path)}")


def test_a_reload_names_file_line_and_field(tmp_path: Path) -> None:
    path = _config(tmp_path, bad="")
    daemon = Daemon(load_config(path), path)
    daemon._open_state()
    try:
        path.write_text(CONFIG.format(state=tmp_path / "state", store=tmp_path / "store", bad=BAD))
        outcome = daemon.reload()
    finally:
        daemon.db.close()
    assert not outcome.ok and outcome.message.startswith(_said(path)), outcome.message
