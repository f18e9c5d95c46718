"""The state directory: created on start and locked so two daemons never share it."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


class StateDirLocked(Exception):
    """Another rocketwatch process holds the state directory."""


class StateDirLock:
    """An exclusive, non-blocking lock on `<state_dir>/lock`, released when the process exits."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock or raise StateDirLocked naming the holder's pid."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        path = self.state_dir / "lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o640)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise StateDirLocked(
                f"state directory {self.state_dir} is in use by another rocketwatch (pid {holder}); "
                "two daemons must not share alert state — stop it or point state_dir elsewhere"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        """Drop the lock."""
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
