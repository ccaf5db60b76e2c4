"""The capture file and the summary of a run, written by a second process.

Encoding and writing a busy mesh's records (city-100: some 5 M a day) takes about a
sixth of a run. :class:`BackgroundSinks` is a capture sink (``write``, ``write_fields``,
``write_drops``, see :mod:`.engine`) that only collects each record's fields in a list
and hands them over in batches, ``marshal``-ed (a fraction of a microsecond per record;
the frame, shared by every outcome of a transmission, goes once per batch); a child
process (:func:`_serve`) encodes them with the very :class:`~gateway.capture.CaptureWriter`
and :class:`~.summary.SummaryBuilder` a run uses in one process, in the same order, so
the capture is the same file byte for byte. The simulation runs on while its records are
written: on a machine with a core to spare the run takes that much less time.

The child is started with ``spawn`` (no copy of the simulation's memory, no threads
inherited) and ignores SIGINT: the parent decides whether the capture is published
(:meth:`BackgroundSinks.close`) or removed (:meth:`BackgroundSinks.abort`); if the
parent dies, the child sees the pipe close and removes the partial file. A failure in
the child (a full disk) stops the run at the next batch with the child's exception.
"""

from __future__ import annotations

import logging
import marshal
import multiprocessing
import os
import pickle
import signal
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from gateway.capture import CaptureError, CaptureWriter, Direction, Record

from .engine import CAPTURE_BUFFER
from .summary import Summary, SummaryBuilder

log = logging.getLogger(__name__)

__all__ = ["BackgroundSinks"]

BATCH = 4096  # records (or drop lists) per message: large enough that a message's cost
# is spread thin, small enough that the child keeps up and a failure shows soon

# message kinds, the first byte of each message from the parent
_BATCH, _RECORD, _CLOSE, _ABORT = b"B", b"R", b"C", b"A"
_DIRECTIONS = {d.value: d for d in Direction}


class BackgroundSinks:
    """A capture sink whose records a child process writes to ``out`` and summarizes
    (``meta``: the capture header's free keys, as :class:`~gateway.capture.CaptureWriter`
    takes them)."""

    def __init__(self, out: str | os.PathLike[str], meta: dict[str, Any]) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child, os.fspath(out), meta),
                                 name="capture-writer", daemon=True)
        self._proc.start()
        child.close()
        self._batch: list[tuple[Any, ...]] = []
        self.count = 0  # records written, the meta record included (once closed)
        self._answer()  # the file is open (or its error raised here, as in one process)

    def write(self, record: Record) -> None:
        self._flush()
        self._send(_RECORD + pickle.dumps(record, pickle.HIGHEST_PROTOCOL))

    def write_fields(self, t: float, node: str, direction: Direction, face: str | None,
                     frame: bytes | None, kind: str | None, feed: bytes | None,
                     seq: int | None, cnr: int | None, reason: str | None,
                     rssi: float | None, snr: float | None, air: float | None) -> None:
        """One record's fields (see ``engine.FieldWriter``); the direction travels as its
        value (marshal takes built-in types only)."""
        batch = self._batch
        batch.append((t, node, direction._value_, face, frame, kind, feed, seq, cnr, reason,
                      rssi, snr, air))
        if len(batch) >= BATCH:
            self._flush()

    def write_drops(self, t: float, face: str | None, frame: bytes | None,
                    items: list[tuple[str, str, float, float]]) -> None:
        """The drop records of one frame at several receivers (see ``engine.DropsWriter``);
        ``items`` is not changed afterwards by the simulator (a new list each frame)."""
        batch = self._batch
        batch.append((t, face, frame, items))
        if len(batch) >= BATCH:
            self._flush()

    def close(self) -> Summary:
        """Write what is left, publish the capture and return the summary of every record."""
        self._flush()
        self._send(_CLOSE)
        summary, self.count = self._answer()
        self._end()
        return summary  # type: ignore[no-any-return]

    def abort(self) -> None:
        """Leave no capture behind (the child removes the partial file)."""
        if self._proc.is_alive():
            self._batch.clear()
            try:
                self._send(_ABORT)
                self._answer()
            except (CaptureError, OSError) as exc:
                # the child is gone or failed already (a child that is still there
                # removes its partial file when _end() closes the pipe); the abort is
                # what the caller asked for, not an error to raise on top of it
                log.debug("capture writer gone while aborting: %s", exc)
        self._end()

    def _flush(self) -> None:
        if self._batch:
            if self._conn.poll():  # the child only speaks first when it failed
                self._answer()
            self._send(_BATCH + marshal.dumps(self._batch))
            self._batch = []

    def _send(self, message: bytes) -> None:
        try:
            self._conn.send_bytes(message)
        except OSError as exc:
            raise CaptureError(f"the capture writer process is gone: {exc}") from None

    def _answer(self) -> Any:
        """The child's reply; its exception raised here."""
        try:
            ok, value = pickle.loads(self._conn.recv_bytes())
        except (EOFError, OSError) as exc:
            raise CaptureError(f"the capture writer process is gone: {exc!r}") from None
        if not ok:
            self._end()
            raise value
        return value

    def _end(self) -> None:
        self._conn.close()
        self._proc.join()


def _serve(conn: Connection, out: str, meta: dict[str, Any]) -> None:
    """The child: records in, capture file and summary out (see the module notes)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides (close or abort)
    writer: CaptureWriter | None = None
    try:
        writer = CaptureWriter(Path(out), "simulator", source="simulator",
                               buffer_size=CAPTURE_BUFFER, **meta)
        builder = SummaryBuilder()
        builder.write(Record(0.0, "simulator", Direction.META, meta=meta))
        _reply(conn, True, None)
        while True:
            message = conn.recv_bytes()
            kind = message[:1]
            if kind == _BATCH:
                _write_batch(marshal.loads(message[1:]), writer, builder)
            elif kind == _RECORD:
                record = pickle.loads(message[1:])
                writer.write(record)
                builder.write(record)
            elif kind == _CLOSE:
                writer.close()
                _reply(conn, True, (builder.result(), writer.count))
                return
            else:
                writer.abort()
                _reply(conn, True, None)
                return
    except EOFError:  # the parent is gone
        if writer is not None:
            writer.abort()
    except BaseException as exc:  # noqa: BLE001 - handed to the parent, which raises it
        if writer is not None:
            writer.abort()
        try:
            _reply(conn, False, exc)
        except OSError as gone:  # the parent is gone too: nobody left to tell
            log.debug("capture writer could not report %r: %s", exc, gone)


def _write_batch(batch: list[tuple[Any, ...]], writer: CaptureWriter,
                 builder: SummaryBuilder) -> None:
    fields, drops = writer.write_fields, writer.write_drops
    summary_fields, summary_drops = builder.write_fields, builder.write_drops
    directions = _DIRECTIONS
    for item in batch:
        if len(item) == 4:
            t, face, frame, items = item
            drops(t, face, frame, items)
            summary_drops(t, face, frame, items)
        else:
            t, node, direction, *rest = item
            d = directions[direction]
            fields(t, node, d, *rest)
            summary_fields(t, node, d, *rest)


def _reply(conn: Connection, ok: bool, value: object) -> None:
    conn.send_bytes(pickle.dumps((ok, value), pickle.HIGHEST_PROTOCOL))
