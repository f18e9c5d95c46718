"""Two daemons must never share one state directory."""

import os

import pytest

from daemon.app.statedir import StateDirLock, StateDirLocked


def test_second_daemon_on_the_same_state_dir_is_refused_with_the_holders_pid(tmp_path):
    first = StateDirLock(tmp_path / "state")
    first.acquire()
    try:
        with pytest.raises(StateDirLocked, match=rf"in use by another rocketwatch \(pid {os.getpid()}\)"):
            StateDirLock(tmp_path / "state").acquire()
    finally:
        first.release()
    # Once the first one is gone the directory can be taken again.
    again = StateDirLock(tmp_path / "state")
    again.acquire()
    again.release()
