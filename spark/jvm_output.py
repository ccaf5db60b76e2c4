"""The Spark JVM's own output, kept off the terminal.

PySpark starts the JVM as a child process that inherits our stderr, and the JVM writes
its start-up notices, log4j warnings and, on Ctrl-C, pages of errors there. While the
JVM is being started, :meth:`JvmOutput.capture` points file descriptor 2 at a pipe, so
the JVM keeps that pipe as its stderr for its whole life. A daemon thread drains it:
Spark's console progress bar (carriage-return updates) goes on to the terminal, every
other line goes to the ``spark.jvm`` logger at debug level (``-vv`` shows it) and the
last few are kept for error messages (why the JVM did not start).
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import threading
from collections.abc import Iterator

__all__ = ["JvmOutput"]

log = logging.getLogger("spark.jvm")

KEPT_LINES = 40
PROGRESS = b"[Stage "  # how Spark's console progress bar starts


class JvmOutput:
    """Drains one JVM's stderr; see the module docstring."""

    def __init__(self, forward_progress: bool = True) -> None:
        self.forward_progress = forward_progress
        self.lines: collections.deque[str] = collections.deque(maxlen=KEPT_LINES)
        self._thread: threading.Thread | None = None

    @contextlib.contextmanager
    def capture(self) -> Iterator[None]:
        """Within this block, children started get a pipe as their stderr."""
        read_end, write_end = os.pipe()
        terminal = os.dup(2)
        self._thread = threading.Thread(target=self._drain, args=(read_end, terminal),
                                        name="spark-jvm-stderr", daemon=True)
        self._thread.start()
        os.dup2(write_end, 2)
        try:
            yield
        finally:
            os.dup2(terminal, 2)
            os.close(write_end)  # the JVM holds its own copy; EOF when it exits

    def last_error(self) -> str | None:
        """The JVM's last line that reads like a reason (``Error: ...``, an exception)."""
        for line in reversed(self.lines):
            text = line.strip()
            if text.startswith(("Error:", "Exception", "ERROR")) or "Exception:" in text:
                return text.removeprefix("Error:").strip()
        return None

    def _drain(self, read_end: int, terminal: int) -> None:
        pending = b""
        with os.fdopen(read_end, "rb", buffering=0) as pipe:
            while chunk := pipe.read(65536):
                pending += chunk
                pending = self._split(pending, terminal)
        if pending.strip():
            self._line(pending)
        os.close(terminal)

    def _split(self, data: bytes, terminal: int) -> bytes:
        """Handle every complete piece of ``data``; return what is left over."""
        while True:
            if data.startswith(b"\r"):  # the progress bar redraws behind a carriage return
                end = min((i for i in (data.find(b"\n", 1), data.find(b"\r", 1)) if i > 0),
                          default=-1)
                if end < 0:
                    return data
                piece, data = data[:end], data[end:]
                text = piece[1:]
                if text.strip() and not text.startswith(PROGRESS):  # a line after a redraw
                    self._line(text)
                elif self.forward_progress:
                    with contextlib.suppress(OSError):
                        os.write(terminal, piece if text.strip() else piece + b"\r")
                continue
            end = data.find(b"\n")
            cr = data.find(b"\r")
            if 0 <= cr < end or (end < 0 and cr >= 0):
                end = cr
                line, data = data[:end], data[end:]
            elif end >= 0:
                line, data = data[:end], data[end + 1:]
            else:
                return data
            if line.strip():
                self._line(line)

    def _line(self, raw: bytes) -> None:
        text = raw.decode("utf-8", "replace").rstrip()
        self.lines.append(text)
        log.debug("%s", text)
