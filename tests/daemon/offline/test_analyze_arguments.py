"""`rocketwatch analyze` with a flag it cannot use: one line naming the flag, exit 2, never a traceback,
and nothing read before it; and a file that only quotes a RocketMQ log is not read as one."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from daemon.cli import main
from tests.fixtures_path import CAPTURE

CLIENT_LOG = CAPTURE / "logs" / "rocketmq_client_stuckGroup.log"

BAD_FLAGS = {
    "a region, not a zone": (["--client-tz", "Asia"],
                             "rocketwatch analyze: --client-tz 'Asia': 'Asia' is a region, not a time zone"),
    "an unknown zone": (["--client-tz", "Mars/Olympus"], "rocketwatch analyze: --client-tz 'Mars/Olympus': unknown"),
    "an offset past 14 hours": (["--client-tz", "GMT+99"],
                                "rocketwatch analyze: --client-tz 'GMT+99': 'GMT+99': a zone's offset is at most 14"),
    "a zero step": (["--step", "0s"], "rocketwatch analyze: --step '0s': give 1s or more"),
    "a step finer than the logs": (["--step", "10ms"], "rocketwatch analyze: --step '10ms': give 1s or more"),
    "a step that is no duration": (["--step", "soon"], "rocketwatch analyze: --step 'soon': expected a duration"),
    "an empty broker name": (["--broker", ""], "rocketwatch analyze: --broker: give a name"),
    "an empty cluster name": (["--cluster", " "], "rocketwatch analyze: --cluster: give a name"),
    "an html report into a missing directory": (["--html", "/nonexistent-dir/report.html"],
                                                "rocketwatch analyze: --html /nonexistent-dir/report.html: no directory"),
}


@pytest.mark.parametrize("case", list(BAD_FLAGS))
def test_a_bad_flag_is_one_line_naming_it(case: str, capsys: pytest.CaptureFixture[str]) -> None:
    flags, said = BAD_FLAGS[case]
    assert main(["analyze", str(CLIENT_LOG), *flags]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.startswith(said) and out.err.count("\n") == 1, out.err


def test_an_html_report_onto_a_directory_is_refused_before_reading(tmp_path: Path, capsys) -> None:
    assert main(["analyze", str(CLIENT_LOG), "--html", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"rocketwatch analyze: --html {tmp_path}: is a directory; give the file to " \
                                      "write the report to\n"


def test_a_readme_that_quotes_store_log_is_not_a_store_log(tmp_path: Path, capsys) -> None:
    """The capture's README quotes `[STORETPS] put_tps …`; it was read as broker-a's store.log."""
    readme = tmp_path / "README.md"
    shutil.copy(CAPTURE / "README.md", readme)
    assert main(["analyze", str(readme)]) == 2
    err = capsys.readouterr().err
    assert f"{readme}: not a RocketMQ log, store directory, thread dump or mqadmin consumerStatus output" in err
    assert "nothing to analyze" in err
