"""An evaluation is stamped with its scheduled slot, so `for:` holds after a whole number of evaluations."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

from daemon.app.jobs import EVALUATE, next_evaluation, run_slot
from tests.daemon.app.test_reload import make_daemon, running

T = datetime(2026, 11, 26, 3, 0, tzinfo=UTC)
EVERY = timedelta(seconds=30)


def test_runs_started_late_by_different_amounts_are_stamped_one_interval_apart() -> None:
    # A busy event loop reaches one run 0.9 s after its slot and the next one 0.1 s after: by the
    # clock they are 29.2 s apart, and `for: 1m` would hold only at a third evaluation.
    first = run_slot(T + EVERY, EVERY, T + timedelta(seconds=0.9))
    second = run_slot(T + 2 * EVERY, EVERY, T + EVERY + timedelta(seconds=0.1))
    third = run_slot(T + 3 * EVERY, EVERY, T + 2 * EVERY + timedelta(seconds=0.5))
    assert (first, second, third) == (T, T + EVERY, T + 2 * EVERY)
    assert third - first >= timedelta(minutes=1)


def test_a_run_off_its_schedule_is_stamped_with_the_clock() -> None:
    by_hand = T + timedelta(seconds=7)
    assert run_slot(T + 3 * EVERY, EVERY, by_hand) == by_hand  # its slot is still to come
    assert run_slot(None, EVERY, by_hand) == by_hand  # a paused or removed job


def test_the_daemon_stamps_its_evaluation_with_the_evaluate_jobs_slot(tmp_path: Path) -> None:
    daemon = make_daemon(tmp_path)

    async def scenario() -> None:
        async with running(daemon):
            await daemon.schedule.run_first_evaluation()
            job = daemon.scheduler.get_job(EVALUATE)
            slot = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=1)
            job.modify(next_run_time=slot + job.trigger.interval)  # the run began, a second late
            assert daemon.scheduled_now(EVALUATE) == slot

    asyncio.run(scenario())


def test_after_the_first_evaluation_the_cadence_starts_at_the_next_slot_half_an_interval_after_a_collection() -> None:
    offset, every = EVERY / 2, EVERY
    # The first evaluation ended 5 s after a collection: the slot 15 s after that collection is still to come.
    assert next_evaluation(T + timedelta(seconds=5), T + EVERY, offset, every) == T + offset
    # It ended 20 s after: the next slot is 15 s after the next collection.
    assert next_evaluation(T + timedelta(seconds=20), T + EVERY, offset, every) == T + EVERY + offset
    # It overran two collections (a cold rebuild on a big store): the next slot after the end, not one passed.
    assert next_evaluation(T + timedelta(seconds=75), T + EVERY, offset, every) == T + 3 * EVERY + offset
    # Exactly on a slot: that one has begun, the next one is an interval on.
    assert next_evaluation(T + offset, T + EVERY, offset, every) == T + offset + EVERY
