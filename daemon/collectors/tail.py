"""Follow a log file the way `tail -F` does: new complete lines since the last read, across
rotation (rename + new file: the old file's rest is read first) and truncation (copytruncate)."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

log = logging.getLogger(__name__)

MAX_READ = 8 * 1024 * 1024  # per file per read: a huge backlog is taken over several cycles


@dataclass(frozen=True)
class Line:
    """One complete line and where it came from."""

    file: str
    lineno: int
    text: str


class FileTailer:
    """Reads the lines appended to `path` since the previous call; never returns a line twice."""

    def __init__(self, path: Path | str, from_start: bool = False, encoding: str = "utf-8") -> None:
        self.path = Path(path)
        self.encoding = encoding
        self._from_start = from_start  # first open: read what is there (analyze) or skip it (live)
        self._handle: BinaryIO | None = None
        self._inode: tuple[int, int] | None = None
        self._offset = 0
        self._lineno = 0
        self._missing_logged = False
        self._looked = False

    def close(self) -> None:
        """Release the open file."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def read(self) -> list[Line]:
        """New complete lines; a partial last line waits for its newline."""
        lines: list[Line] = []
        looked, self._looked = self._looked, True
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            if not self._missing_logged:
                log.warning("log file %s does not exist (yet); watching for it", self.path)
                self._missing_logged = True
            if self._handle is not None:  # rotated away and not recreated yet: finish the old one
                lines += self._drain()
            return lines
        self._missing_logged = False
        identity = (stat.st_dev, stat.st_ino)
        if self._handle is not None and identity != self._inode:
            lines += self._drain()  # rotated: the rest of the old file first, then the new one from 0
            self.close()
            self._open(identity, at_end=False)
        elif self._handle is None:
            # Only the file found at the first look may be skipped; one that appears later is new.
            self._open(identity, at_end=not self._from_start and not looked)
        elif stat.st_size < self._offset:
            log.info("log file %s was truncated; reading it again from the start", self.path)
            self._offset, self._lineno = 0, 0
        lines += self._read_available()
        return lines

    def _open(self, identity: tuple[int, int], at_end: bool) -> None:
        self._handle = open(self.path, "rb")  # noqa: SIM115 (held open across calls, closed in close())
        self._inode = identity
        self._offset, self._lineno = 0, 0
        if at_end:
            self._skip_to_end()

    def _skip_to_end(self) -> None:
        # Count the lines skipped so line numbers stay true to the file; a partial last line is
        # left to be read once it is complete.
        assert self._handle is not None
        position = complete = 0
        self._handle.seek(0)
        while chunk := self._handle.read(MAX_READ):
            self._lineno += chunk.count(b"\n")
            newline = chunk.rfind(b"\n")
            if newline >= 0:
                complete = position + newline + 1
            position += len(chunk)
        self._offset = complete

    def _drain(self) -> list[Line]:
        lines = self._read_available()
        assert self._handle is not None
        rest = self._handle.read()
        if rest.strip():  # the old file ended without a newline: its last line is complete now
            self._lineno += 1
            lines.append(Line(str(self.path), self._lineno, rest.decode(self.encoding, "replace").rstrip("\r")))
        return lines

    def _read_available(self) -> list[Line]:
        assert self._handle is not None
        self._handle.seek(self._offset)
        data = self._handle.read(MAX_READ)
        end = data.rfind(b"\n") + 1
        if end == 0:
            return []
        lines = []
        for raw in data[:end].split(b"\n")[:-1]:
            self._lineno += 1
            lines.append(Line(str(self.path), self._lineno, raw.decode(self.encoding, "replace").rstrip("\r")))
        self._offset += end
        self._handle.seek(self._offset)
        return lines
