"""The daemon's config file: every mistake is reported with file, line, column and field."""

import textwrap

import pytest

from config.loader import ConfigLoadError, load_config


def _write(tmp_path, text):
    path = tmp_path / "rocketwatch.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_example_config_is_valid():
    config = load_config("config/rocketwatch.example.yaml")
    assert config.clusters[0].namesrv == ["127.0.0.1:9876"]
    assert config.stale_after.total_seconds() == 60  # 2 x the 30 s collect interval
    assert [r.name for r in config.notify.receivers] == ["oncall-slack", "oncall-mail"]


def test_every_error_is_positioned(tmp_path):
    path = _write(
        tmp_path,
        """\
        clusters:
          - name: prod
            namesrv: ["10.0.0.1"]
        collect:
          intervall: 30s
          timeout: 5 minutes
        """,
    )
    with pytest.raises(ConfigLoadError) as err:
        load_config(path)
    lines = [str(e) for e in err.value.errors]
    assert any(line.startswith(f"{path}:3:") and "clusters.0.namesrv" in line and "host:port" in line for line in lines)
    assert any(line.startswith(f"{path}:5:") and "collect.intervall: unknown field" in line for line in lines)
    assert any(line.startswith(f"{path}:6:") and "collect.timeout" in line for line in lines)
    assert len(lines) == 3


def test_namesrv_accepts_rocketmq_style_list_and_paths_are_relative_to_the_file(tmp_path):
    path = _write(
        tmp_path,
        """\
        clusters:
          - name: prod
            namesrv: "10.0.0.1:9876;10.0.0.2:9876"
        state_dir: state
        rules: [builtin, my-rules]
        """,
    )
    (tmp_path / "my-rules").mkdir()
    config = load_config(path)
    assert config.clusters[0].namesrv == ["10.0.0.1:9876", "10.0.0.2:9876"]
    assert config.state_dir == tmp_path / "state"
    assert config.store == tmp_path / "state" / "store"
    assert config.rules == ["builtin", str(tmp_path / "my-rules")]


def test_yaml_syntax_error_has_a_position(tmp_path):
    path = _write(tmp_path, "clusters:\n  - name: [prod\n")
    with pytest.raises(ConfigLoadError, match=rf"{path}:\d+:\d+: YAML syntax"):
        load_config(path)
