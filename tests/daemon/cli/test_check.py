"""`rocketwatch check`: every error with file:line, exit 1, and never a JVM."""

from __future__ import annotations

import subprocess
import sys
import textwrap

BAD_RULES = textwrap.dedent(
    """\
    groups:
      - name: consumer
        rules:
          - alert: SpanTooLong
            kind: threshold
            table: process_queue
            value: cached_max_offset - cached_min_offset
            above: {critical: max_span}
            for: 5 minutes
            thresold: 2000
            summary: "{group} span {value}"
            diagnosis: "blocked"
            next_steps: "jstack"
    """
)

# Runs the CLI in a fresh interpreter and reports whether pyspark was ever imported.
_PROBE = "import sys; from daemon.cli import main; rc = main(sys.argv[1:]); print('PYSPARK', 'pyspark' in sys.modules); sys.exit(rc)"


def _check(*files: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _PROBE, "check", *files], capture_output=True, text=True, timeout=60)


def test_typo_and_bad_duration_are_both_reported_with_positions(tmp_path):
    path = tmp_path / "rules.yaml"
    path.write_text(BAD_RULES)
    result = _check(str(path))
    assert result.returncode == 1
    lines = [line for line in result.stdout.splitlines() if line.startswith(str(path))]
    assert len(lines) == 2, result.stdout
    assert any(line.startswith(f"{path}:9:") and "for" in line and "5 minutes" in line for line in lines)
    assert any(line.startswith(f"{path}:10:") and "thresold" in line for line in lines)
    assert all('group "consumer", rule "SpanTooLong"' in line for line in lines)
    assert "PYSPARK False" in result.stdout


def test_example_config_with_builtin_rules_checks_clean():
    result = _check("config/rocketwatch.example.yaml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "OK: 1 file(s)" in result.stdout and "PYSPARK False" in result.stdout


def test_override_of_an_unknown_rule_is_an_error(tmp_path):
    config = tmp_path / "rocketwatch.yaml"
    config.write_text(
        'clusters: [{name: c, namesrv: ["127.0.0.1:9876"]}]\n'
        "rule_overrides:\n  ProcessQueueSpanTooLonng: {for: 1m}\n"
    )
    result = _check(str(config))
    assert result.returncode == 1
    assert "ProcessQueueSpanTooLonng" in result.stdout and "ProcessQueueSpanTooLong" in result.stdout


BAD_OVERRIDES = textwrap.dedent(
    """\
    clusters: [{name: c, namesrv: ["127.0.0.1:9876"]}]
    rule_overrides:
      ProcessQueueSpanTooLong:
        for: 10m
        exclude:
          group: "test-(.*"
      RebalanceChurn:
        below: {critical: 3}
      ConsumeDelayHigh:
        above: {critical: "max_delay_ms * 2"}
      ProcessQueueSpanTooLonng: {for: 1m}
    """
)


def test_override_errors_name_file_line_and_field(tmp_path):
    config = tmp_path / "rocketwatch.yaml"
    config.write_text(BAD_OVERRIDES)
    result = _check(str(config))
    assert result.returncode == 1
    lines = [line for line in result.stdout.splitlines() if line.startswith(str(config))]
    assert len(lines) == 4, result.stdout
    bad_regex, no_levels, unknown_column, unknown_rule = lines  # in the order of the file
    assert bad_regex.startswith(f"{config}:6:") and "rule_overrides.ProcessQueueSpanTooLong.exclude.group: " \
        "invalid regex 'test-(.*'" in bad_regex
    assert no_levels.startswith(f"{config}:8:") and "rule_overrides.RebalanceChurn.below: " \
        "rule kind has no `below` levels" in no_levels
    assert unknown_column.startswith(f"{config}:10:") and "rule_overrides.ConsumeDelayHigh.above.critical: " \
        "unknown column 'max_delay_ms'" in unknown_column
    assert unknown_rule.startswith(f"{config}:11:") and "rule_overrides.ProcessQueueSpanTooLonng: " \
        "unknown rule 'ProcessQueueSpanTooLonng'; did you mean 'ProcessQueueSpanTooLong'?" in unknown_rule
    assert "PYSPARK False" in result.stdout
