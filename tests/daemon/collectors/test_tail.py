"""Following a log file: appended lines once each, with true line numbers, across rotation and truncation."""

from __future__ import annotations

import os

from daemon.collectors.tail import FileTailer


def texts(lines) -> list[tuple[int, str]]:
    return [(line.lineno, line.text) for line in lines]


def test_history_is_skipped_appended_lines_come_once_and_partial_lines_wait(tmp_path):
    path = tmp_path / "broker.log"
    path.write_text("old 1\nold 2\n")
    tail = FileTailer(path)
    assert tail.read() == []  # started at the end, like tail -F -n0
    with path.open("a") as f:
        f.write("new 3\nnew 4\npartial")
    assert texts(tail.read()) == [(3, "new 3"), (4, "new 4")]
    assert tail.read() == []
    with path.open("a") as f:
        f.write(" line 5\r\n")
    assert texts(tail.read()) == [(5, "partial line 5")]
    tail.close()


def test_rotation_reads_the_old_files_rest_then_the_new_file(tmp_path):
    path = tmp_path / "rocketmq_client.log"
    path.write_text("a1\n")
    tail = FileTailer(path)
    tail.read()
    with path.open("a") as old:
        old.write("a2\n")
        old.flush()
        os.rename(path, tmp_path / "rocketmq_client.1.log")  # logback rolls the file
        old.write("a3 written after the rename\n")  # the logger still held the old file
        old.flush()
        path.write_text("b1\nb2\n")
        assert texts(tail.read()) == [(2, "a2"), (3, "a3 written after the rename"), (1, "b1"), (2, "b2")]
    with path.open("a") as f:
        f.write("b3\n")
    assert texts(tail.read()) == [(3, "b3")]
    tail.close()


def test_copytruncate_starts_over_and_a_late_file_is_read_whole(tmp_path):
    path = tmp_path / "store.log"
    path.write_text("x1\nx2\n")
    tail = FileTailer(path)
    tail.read()
    path.write_text("y1\n")  # truncated and rewritten in place
    assert texts(tail.read()) == [(1, "y1")]

    late = FileTailer(tmp_path / "not-yet.log")
    assert late.read() == []
    (tmp_path / "not-yet.log").write_text("first\nsecond\n")
    assert texts(late.read()) == [(1, "first"), (2, "second")]  # new since we started: nothing skipped
    tail.close()
    late.close()


def test_from_start_reads_what_is_already_there(tmp_path):
    path = tmp_path / "broker.log"
    path.write_text("one\ntwo\n")
    tail = FileTailer(path, from_start=True)
    assert texts(tail.read()) == [(1, "one"), (2, "two")]
    tail.close()
