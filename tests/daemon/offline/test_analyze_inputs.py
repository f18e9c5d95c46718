"""What `rocketwatch analyze` says about the files it did not read: one line per folder and kind,
with a count and a reason that is true, and every kind named (captures, archives, mqadmin output,
store files) — never one line per file of a capture directory."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from daemon.offline.analyze import render
from daemon.offline.analyze.inputs import discover
from daemon.offline.analyze.report import Report, analyze
from tests.fixtures_path import CAPTURE

ARCHIVE = "consumequeue_AuditTopic_RETRY_DLQ_failGroup.tar.gz"


def _report(paths: list[Path]) -> Report:
    """The report `analyze` would print about these paths' inputs, without reading them (no Spark)."""
    inputs = discover(paths)
    return Report(
        cluster="DefaultCluster", cluster_told=False, brokers=[], files=[], span=None, findings=[], timeline=[],
        events=[], put_minutes=[], offsets=[], stuck=[], idle_consume_threads={}, problems=[],
        skipped=[(str(p), why) for p, why in inputs.skipped], unused=[(str(p), why) for p, why in inputs.unused],
    )


def _section(text: str, title: str) -> list[str]:
    match = re.search(rf"^{title}\n((?:  .*\n)*)", text, re.M)
    return match.group(1).splitlines() if match else []


def _captures(folder: Path) -> int:
    """Files of the capture tool's requests: NAME.frame, NAME.req.frame, NAME.body, NAME.json."""
    stems = {p.name[: -len(".frame")] for p in folder.glob("*.frame") if not p.name.endswith(".req.frame")}
    return sum(1 for p in folder.iterdir()
               if any(p.name == stem + ext for stem in stems for ext in (".frame", ".req.frame", ".body", ".json")))


def test_a_capture_directory_is_one_line_with_its_count_and_reason() -> None:
    lines = _section(render.text(_report([CAPTURE / "wire"])), "NOT READ")
    n = _captures(CAPTURE / "wire")
    (wire,) = [line for line in lines if "remoting capture" in line]
    assert wire.startswith(f"  {CAPTURE / 'wire'}/: {n} files, remoting captures") and "not decode" in wire, lines
    # The capture tool's own notes (t1_timeline.txt, t1_clientIds.json) are a kind of their own.
    assert len(lines) == 2, lines


def test_every_kind_in_the_capture_is_named_once_per_folder() -> None:
    text = render.text(_report([CAPTURE]))
    unread = _section(text, "NOT READ")
    assert 4 <= len(unread) <= 12, unread  # was one line per file: 396
    store = f"{CAPTURE / 'store'}/"
    # The store's consume-queue archive: named, with the command that puts it where analyze reads it.
    (archive,) = [line for line in unread if ARCHIVE in line]
    assert f"tar xf {CAPTURE / 'store' / ARCHIVE} -C {CAPTURE / 'store'}" in archive, archive
    # The cq_* captures beside it, and the mqadmin topicStatus outputs taken with them.
    assert any(line.startswith(f"  {store}: 12 files, remoting captures") for line in unread), unread
    assert any(line.startswith(f"  {store}: 3 files, mqadmin output other than consumerStatus") for line in unread)
    assert any(line.startswith(f"  {CAPTURE / 'mqadmin'}/: 34 files, mqadmin output other than consumerStatus")
               for line in unread), unread
    # The store's own files analyze has no reader for are said to be not used, by kind.
    unused = _section(text, "NOT USED")
    assert any(line.startswith(f"  {store}config/: 3 files, RocketMQ store config files") for line in unused), unused


def test_the_json_still_lists_every_file_for_scripts() -> None:
    import json

    data = json.loads(render.as_json(_report([CAPTURE / "wire"])))
    assert len(data["skipped"]) == len(list((CAPTURE / "wire").iterdir()))


def test_a_lone_unknown_file_keeps_its_own_line(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("what the on-call wrote down\n")
    lines = _section(render.text(_report([tmp_path])), "NOT READ")
    assert lines == [f"  {tmp_path / 'notes.txt'}: not a RocketMQ log, store directory, thread dump or mqadmin "
                     "consumerStatus output"]


def test_files_an_operator_left_in_a_store_directory_are_named(tmp_path: Path) -> None:
    store = tmp_path / "store"
    shutil.copytree(CAPTURE / "store" / "config", store / "config")
    shutil.copy(CAPTURE / "store" / "checkpoint", store / "checkpoint")
    shutil.copy(CAPTURE / "store" / ARCHIVE, store / ARCHIVE)
    (store / "commitlog").mkdir()
    (store / "commitlog" / "00000000000000000000").write_bytes(b"\0" * 64)
    text = render.text(_report([store]))  # the store itself given, not a folder holding it
    assert any(ARCHIVE in line and f"-C {store}" in line for line in _section(text, "NOT READ")), text
    assert any("commitlog" in line and "not used" in line for line in _section(text, "NOT USED")), text


@pytest.mark.spark
def test_analyze_of_the_whole_capture_prints_a_short_not_read_section(spark: object) -> None:
    text = render.text(analyze([CAPTURE], cluster="DefaultCluster", broker="broker-a", spark=spark))
    unread = _section(text, "NOT READ")
    assert len(unread) <= 12 and any(ARCHIVE in line for line in unread), unread
