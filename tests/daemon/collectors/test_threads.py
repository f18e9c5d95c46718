"""Stuck consume threads from the running-info thread dumps (real 4.9.7 captures)."""

from __future__ import annotations

from daemon.collectors.remoting.running_info import decode_consumer_running_info
from daemon.collectors.threads import parse_dump, stuck_threads
from tests.daemon.collectors.wire import body


def _dump(rnd: str) -> str:
    text = decode_consumer_running_info(body(f"{rnd}_307_GET_CONSUMER_RUNNING_INFO_stuckGroup_5764_jstack")).jstack
    assert text is not None
    return text


def test_parse_dump_reads_names_states_and_frames() -> None:
    threads = parse_dump(_dump("t1"))
    idle = threads["ConsumeMessageThread_stuckGroup_1"]
    assert idle.state == "WAITING"
    assert any("LinkedBlockingQueue.take" in f for f in idle.frames)
    busy = threads["ConsumeMessageThread_stuckGroup_2"]
    assert busy.state == "TIMED_WAITING" and busy.frames[0] == "java.lang.Thread.sleep(Native Method)"


def test_the_two_blocked_threads_are_stuck_across_dumps_and_idle_ones_are_not() -> None:
    stuck = stuck_threads("c", [_dump("t1"), _dump("t2")], "stuckGroup")
    assert [t.thread for t in stuck] == ["ConsumeMessageThread_stuckGroup_2", "ConsumeMessageThread_stuckGroup_3"]
    assert stuck[0].app_frame == "cap.Cons.lambda$main$0(Cons.java:34)"


def test_one_dump_proves_nothing() -> None:
    assert stuck_threads("c", [_dump("t1")], "stuckGroup") == []


def test_a_thread_that_moved_between_dumps_is_not_stuck() -> None:
    first = _dump("t1")
    moved = first.replace("cap.Cons.lambda$main$0(Cons.java:34)", "cap.Cons.lambda$main$0(Cons.java:36)", 1)
    stuck = stuck_threads("c", [first, moved], "stuckGroup")
    assert [t.thread for t in stuck] == ["ConsumeMessageThread_stuckGroup_3"]
