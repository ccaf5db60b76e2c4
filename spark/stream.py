"""Read a capture record by record, knowing the byte offset of each one.

``gateway.capture.CaptureReader`` stops at a torn last record and raises on anything
else it cannot read; a campaign converter also has to say *where* a file went wrong.
:class:`OffsetReader` decodes the same format with :meth:`Record.from_map` (so the
rules for what a valid record is stay in one place) and reports the offset of the
record it is at: ``torn_at`` for a file cut short, :class:`BadCapture` for a record
that is not one.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path
from typing import Any

import cbor2

from gateway.capture import FORMAT, VERSION, CaptureError, CaptureStream, Direction, Record

__all__ = ["BadCapture", "OffsetReader", "json_safe", "read_header"]


class BadCapture(Exception):
    """A capture file that cannot be read past ``offset``."""

    def __init__(self, path: Path, offset: int, reason: str) -> None:
        super().__init__(f"{path}: {reason} at byte {offset}")
        self.path, self.offset, self.reason = path, offset, reason


def json_safe(value: Any) -> Any:
    """A header value as JSON can hold it (bytes as hex)."""
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


class OffsetReader:
    """Iterate ``(offset, record)`` over a capture, header first.

    A file that ends inside a record stops the iteration and sets ``torn_at`` to the
    offset of that record; any other undecodable record, or a first record that is not
    a version-1 header, raises :class:`BadCapture`. ``position`` is how many bytes have
    been consumed so far (for progress bars).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.torn_at: int | None = None
        self.position = 0
        self.meta: dict[str, Any] = {}
        self.node = ""

    def __iter__(self) -> Generator[tuple[int, Record], None, None]:
        stream = CaptureStream(self.path)  # plain or zstd-compressed
        try:
            size = os.fstat(stream.raw.fileno()).st_size
            decoder = cbor2.CBORDecoder(stream.fp)
            offset = 0
            while not stream.at_end():
                try:
                    raw = decoder.decode()
                except cbor2.CBORDecodeEOF:
                    self.torn_at = offset
                    self.position = size
                    return
                except cbor2.CBORDecodeError as exc:
                    raise BadCapture(self.path, offset, f"not CBOR ({exc})") from None
                try:
                    record = Record.from_map(raw)
                except CaptureError as exc:
                    raise BadCapture(self.path, offset, f"not a capture record ({exc})"
                                     ) from None
                if offset == 0:
                    self._check_header(record)
                elif record.dir is Direction.META:
                    raise BadCapture(self.path, offset, "a second header record")
                yield offset, record
                offset = stream.tell()
                self.position = stream.raw.tell()  # bytes of the file, for progress bars
            if offset == 0:
                raise BadCapture(self.path, 0, "empty file, no header record")
        finally:
            stream.close()

    def _check_header(self, record: Record) -> None:
        if record.dir is not Direction.META or record.meta.get("format") != FORMAT:
            raise BadCapture(self.path, 0, "not a tinySSB capture (no header record first)")
        if record.meta.get("version") != VERSION:
            raise BadCapture(self.path, 0, f"capture version {record.meta.get('version')!r}, "
                                           f"this reader knows {VERSION}")
        self.meta = json_safe(record.meta)
        self.node = record.node


def read_header(path: str | os.PathLike[str]) -> OffsetReader:
    """A reader that has read the header of ``path`` (``meta``, ``node``) and stopped.

    Raises :class:`BadCapture` when the file does not start with a capture header.
    """
    reader = OffsetReader(path)
    records = reader.__iter__()
    first = next(records, None)
    records.close()  # closes the file
    if first is None:
        raise BadCapture(reader.path, 0, "torn header record")
    return reader
