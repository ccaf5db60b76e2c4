"""The capture format: one CBOR map per event, in a CBOR Sequence (RFC 8742).

Gateways and the simulator write captures; the Spark pipeline reads them. The first
record describes the capture (``dir`` = ``meta``); every later record is one event at
the runtime boundary:

========  ==============================================================
``rx``    a frame heard on a face and accepted by the Node
``drop``  a frame heard on a face and dropped (``reason`` says why)
``tx``    a frame put on a face
``store`` an entry (``cnr`` absent) or side-chain chunk stored
========  ==============================================================

Keys (absent when unknown): ``t`` seconds (Unix time in a gateway, virtual time in a
simulation), ``node``, ``face``, ``dir``, ``frame`` (bytes as on the link, CRC trailer
included where the face has one), ``kind`` (claim, novelty, zap, want, chnk, entry,
chunk, unknown), ``feed`` (32-byte feed id), ``seq``, ``cnr``, ``reason``, ``rssi``
(dBm), ``snr`` (dB), ``air`` (seconds on air). ``docs/capture-format.md`` is the
reference.

The writer writes to ``<path>.part`` and renames it to ``<path>`` when closed, so a
file under its final name is always whole. The reader streams records and stops
cleanly at a torn last record (a writer killed mid-write), counting it.
"""

from __future__ import annotations

import io
import logging
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import IO, Any, Self

import cbor2

from .replication.events import FrameKind, Outgoing, RxReport
from .store.base import FeedStore

__all__ = [
    "FORMAT",
    "VERSION",
    "CaptureError",
    "CaptureReader",
    "CaptureWriter",
    "Direction",
    "Record",
    "RecordEncoder",
    "export_pcap",
    "read_capture",
    "records_for_own",
    "records_for_rx",
    "records_for_tx",
]

log = logging.getLogger(__name__)

FORMAT = "tinyssb-capture"
VERSION = 1


class CaptureError(Exception):
    """A file that is not a capture we can read."""


class Direction(Enum):
    META = "meta"
    RX = "rx"
    TX = "tx"
    DROP = "drop"
    STORE = "store"


_KINDS = {k.value for k in FrameKind}


@dataclass(slots=True)
class Record:
    """One capture event."""

    t: float
    node: str
    dir: Direction
    face: str | None = None
    frame: bytes | None = None
    kind: str | None = None
    feed: bytes | None = None
    seq: int | None = None
    cnr: int | None = None
    reason: str | None = None
    rssi: float | None = None
    snr: float | None = None
    air: float | None = None
    meta: dict[str, Any] = field(default_factory=dict)  # only for dir == META

    def to_map(self) -> dict[str, Any]:
        m: dict[str, Any] = {"t": self.t, "node": self.node, "dir": self.dir.value}
        for name in ("face", "frame", "kind", "feed", "seq", "cnr", "reason", "rssi", "snr",
                     "air"):
            value = getattr(self, name)
            if value is not None:
                m[name] = value
        if self.dir is Direction.META:
            m.update(self.meta)
        return m

    @classmethod
    def from_map(cls, m: object) -> Record:
        if not isinstance(m, dict):
            raise CaptureError(f"a capture record is a CBOR map, got {type(m).__name__}")
        try:
            direction = Direction(m["dir"])
            rec = cls(float(m["t"]), str(m["node"]), direction)
        except (KeyError, ValueError, TypeError) as exc:
            raise CaptureError(f"capture record without valid t/node/dir: {exc}") from exc
        rec.face = _opt(m, "face", str)
        rec.frame = _opt(m, "frame", bytes)
        rec.kind = _opt(m, "kind", str)
        rec.feed = _opt(m, "feed", bytes)
        rec.seq = _opt(m, "seq", int)
        rec.cnr = _opt(m, "cnr", int)
        rec.reason = _opt(m, "reason", str)
        rec.rssi = _opt_float(m, "rssi")
        rec.snr = _opt_float(m, "snr")
        rec.air = _opt_float(m, "air")
        if direction is Direction.META:
            rec.meta = {k: v for k, v in m.items() if k not in ("t", "node", "dir")}
        elif rec.kind is not None and rec.kind not in _KINDS:
            raise CaptureError(f"unknown frame kind {rec.kind!r}")
        return rec


def _opt(m: dict[Any, Any], key: str, typ: type[Any]) -> Any:
    value = m.get(key)
    if value is None:
        return None
    if not isinstance(value, typ) or isinstance(value, bool):
        raise CaptureError(f"capture field {key!r} should be {typ.__name__}, got {value!r}")
    return value


def _opt_float(m: dict[Any, Any], key: str) -> float | None:
    value = m.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CaptureError(f"capture field {key!r} should be a number, got {value!r}")
    return float(value)


def records_for_rx(t: float, node: str, face: str, frame: bytes, report: RxReport, *,
                   rssi: float | None = None, snr: float | None = None) -> list[Record]:
    """The rx or drop record of one received frame, then a store record per item stored."""
    direction = Direction.DROP if report.drop is not None else Direction.RX
    out = [Record(t, node, direction, face, bytes(frame), report.kind.value, report.fid,
                  report.seq, report.cnr,
                  report.drop.value if report.drop is not None else None, rssi, snr)]
    for s in report.stored:
        kind = FrameKind.ENTRY if s.cnr is None else FrameKind.CHUNK
        out.append(Record(t, node, Direction.STORE, face, None, kind.value, s.fid, s.seq, s.cnr))
    return out


def records_for_tx(t: float, node: str, out: Outgoing) -> Record:
    return Record(t, node, Direction.TX, out.face, out.frame, out.kind.value, out.fid, out.seq,
                  out.cnr, air=out.airtime if out.airtime else None)


def records_for_own(t: float, node: str, fid: bytes, seq: int,
                    chunks: int | FeedStore) -> list[Record]:
    """The store records of an entry we published: the entry, then each chunk
    (``chunks``: how many, or the store that holds them)."""
    if not isinstance(chunks, int):
        store, chunks = chunks, 0
        while store.read_chunk(fid, seq, chunks) is not None:
            chunks += 1
    out = [Record(t, node, Direction.STORE, kind="entry", feed=fid, seq=seq)]
    out.extend(Record(t, node, Direction.STORE, kind="chunk", feed=fid, seq=seq, cnr=cnr)
               for cnr in range(chunks))
    return out


def _head(major: int, n: int) -> bytes:
    """A CBOR head: major type (shifted) and argument 0 <= ``n`` < 2**64, shortest form."""
    if n < 24:
        return bytes((major | n,))
    if n < 0x100:
        return bytes((major | 24, n))
    if n < 0x10000:
        return bytes((major | 25,)) + n.to_bytes(2, "big")
    if n < 0x1_0000_0000:
        return bytes((major | 26,)) + n.to_bytes(4, "big")
    return bytes((major | 27,)) + n.to_bytes(8, "big")


def _key(name: str) -> bytes:
    return bytes(cbor2.dumps(name))


_DROP = Direction.DROP
_SMALL = 256  # byte strings and integers below this take a precomputed head
_MAP_HEADS = [_head(0xA0, n) for n in range(16)]  # a record map has at most 13 items


class RecordEncoder:
    """CBOR bytes of a record, exactly ``cbor2.dumps(record.to_map())``, about twice as fast.

    Captures hold millions of records, and building a map per record for cbor2 costs
    about as much as the simulation step that made it. The encoder writes the map's
    items directly, in ``to_map``'s order and with cbor2's encodings: floats as 8-byte
    doubles, the shortest integer and length heads, each key and each of the few
    distinct strings (node, face, kind, reason names) encoded once and remembered. A
    record with a value outside these fast paths (a meta record, an integer time, a NaN,
    a negative or huge number, a bytearray) goes through cbor2 as a whole.

    :meth:`fields` takes the record's fields without a :class:`Record` (the simulator
    writes millions of them). The encoding of the time and of the frame is kept from one
    record to the next while the very same objects come again: every outcome of one
    transmission at its receivers shares both.
    """

    __slots__ = ("_air", "_cnr", "_double", "_feed", "_frame", "_frame_obj", "_frame_part",
                 "_kind", "_prefix", "_reason", "_rssi", "_rssi_snr", "_seq", "_snr", "_t",
                 "_t_obj", "_t_part")

    def __init__(self) -> None:
        self._prefix: dict[tuple[str, str, str | None], tuple[int, bytes]] = {}
        self._kind: dict[str, bytes] = {}
        self._reason: dict[str, bytes] = {}
        self._frame = [_key("frame") + _head(0x40, n) for n in range(_SMALL)]
        self._feed = [_key("feed") + _head(0x40, n) for n in range(_SMALL)]
        self._seq = [_key("seq") + _head(0x00, n) for n in range(_SMALL)]
        self._cnr = [_key("cnr") + _head(0x00, n) for n in range(_SMALL)]
        self._double = struct.Struct(">Bd").pack  # 0xFB and the 8-byte double
        self._t, self._rssi, self._snr, self._air = (_key(k) for k in ("t", "rssi", "snr", "air"))
        # the keys and doubles of rssi and snr in one go (records of frames heard)
        self._rssi_snr = struct.Struct(f">{len(self._rssi)}sBd{len(self._snr)}sBd").pack
        # the last time and frame encoded (compared by identity: the objects are held)
        self._t_obj: object = None
        self._t_part = b""
        self._frame_obj: object = None
        self._frame_part = b""

    def _text(self, cache: dict[str, bytes], name: str, value: str) -> bytes:
        b = cache.get(value)
        if b is None:
            b = cache[value] = _key(name) + bytes(cbor2.dumps(value))
        return b

    def encode(self, r: Record) -> bytes:
        if r.dir is Direction.META:
            return bytes(cbor2.dumps(r.to_map()))
        return self.fields(r.t, r.node, r.dir, r.face, r.frame, r.kind, r.feed, r.seq, r.cnr,
                           r.reason, r.rssi, r.snr, r.air)

    def fields(self, t: float, node: str, direction: Direction, face: str | None,
               frame: bytes | None, kind: str | None, feed: bytes | None, seq: int | None,
               cnr: int | None, reason: str | None, rssi: float | None, snr: float | None,
               air: float | None) -> bytes:
        """The CBOR bytes of the record with these fields (``direction`` not META)."""
        if t is not self._t_obj:
            if type(t) is not float or t - t != 0.0:
                return self._whole(t, node, direction, face, frame, kind, feed, seq, cnr,
                                   reason, rssi, snr, air)
            self._t_obj = t
            self._t_part = self._t + self._double(0xFB, t)
        key = (node, direction._value_, face)  # the value: an Enum member hashes slowly
        prefix = self._prefix.get(key)
        if prefix is None:
            if type(node) is not str or (face is not None and type(face) is not str):
                return self._whole(t, node, direction, face, frame, kind, feed, seq, cnr,
                                   reason, rssi, snr, air)
            items = [_key("node"), _key(node), _key("dir"), _key(direction.value)]
            if face is not None:
                items += (_key("face"), _key(face))
            prefix = self._prefix[key] = (1 + len(items) // 2, b"".join(items))  # t too
        n, head = prefix
        parts = [b"", self._t_part, head]
        if frame is not None:
            if frame is not self._frame_obj:
                if type(frame) is not bytes or len(frame) >= _SMALL:
                    return self._whole(t, node, direction, face, frame, kind, feed, seq, cnr,
                                       reason, rssi, snr, air)
                self._frame_obj = frame
                self._frame_part = self._frame[len(frame)] + frame
            parts.append(self._frame_part)
            n += 1
        v: Any
        if (v := kind) is not None:
            if type(v) is not str:
                return self._whole(t, node, direction, face, frame, kind, feed, seq, cnr,
                                   reason, rssi, snr, air)
            parts.append(self._kind.get(v) or self._text(self._kind, "kind", v))
            n += 1
        if (v := feed) is not None:
            if type(v) is not bytes or len(v) >= _SMALL:
                return self._whole(t, node, direction, face, frame, kind, feed, seq, cnr,
                                   reason, rssi, snr, air)
            parts += (self._feed[len(v)], v)
            n += 1
        if (v := seq) is not None:
            if type(v) is not int or not 0 <= v < _SMALL:
                return self._whole(t, node, direction, face, frame, kind, feed, seq, cnr,
                                   reason, rssi, snr, air)
            parts.append(self._seq[v])
            n += 1
        if (v := cnr) is not None:
            if type(v) is not int or not 0 <= v < _SMALL:
                return self._whole(t, node, direction, face, frame, kind, feed, seq, cnr,
                                   reason, rssi, snr, air)
            parts.append(self._cnr[v])
            n += 1
        if (v := reason) is not None:
            if type(v) is not str:
                return self._whole(t, node, direction, face, frame, kind, feed, seq, cnr,
                                   reason, rssi, snr, air)
            parts.append(self._reason.get(v) or self._text(self._reason, "reason", v))
            n += 1
        double = self._double
        if (v := rssi) is not None:
            if type(v) is not float or v - v != 0.0:  # not finite: cbor2 halves it
                return self._whole(t, node, direction, face, frame, kind, feed, seq, cnr,
                                   reason, rssi, snr, air)
            parts += (self._rssi, double(0xFB, v))
            n += 1
        if (v := snr) is not None:
            if type(v) is not float or v - v != 0.0:
                return self._whole(t, node, direction, face, frame, kind, feed, seq, cnr,
                                   reason, rssi, snr, air)
            parts += (self._snr, double(0xFB, v))
            n += 1
        if (v := air) is not None:
            if type(v) is not float or v - v != 0.0:
                return self._whole(t, node, direction, face, frame, kind, feed, seq, cnr,
                                   reason, rssi, snr, air)
            parts += (self._air, double(0xFB, v))
            n += 1
        parts[0] = _MAP_HEADS[n]
        return b"".join(parts)

    def drops(self, t: float, face: str | None, frame: bytes | None,
              items: list[tuple[str, str, float, float]]) -> bytes:
        """The drop records of one frame at several receivers: ``items`` holds
        (node, reason, rssi, snr) for each; the same bytes as :meth:`fields` for each."""
        fields = self.fields
        out: list[bytes] = []
        if frame is None or type(t) is not float:
            for node, reason, rssi, snr in items:
                out.append(fields(t, node, _DROP, face, frame, None, None, None, None, reason,
                                  rssi, snr, None))
            return b"".join(out)
        prefixes, reasons, pack = self._prefix, self._reason, self._rssi_snr
        rssi_key, snr_key = self._rssi, self._snr
        for node, reason, rssi, snr in items:
            prefix = prefixes.get((node, "drop", face))
            part = reasons.get(reason)
            if (prefix is None or part is None or t is not self._t_obj
                    or frame is not self._frame_obj or type(rssi) is not float
                    or type(snr) is not float or rssi - rssi != 0.0 or snr - snr != 0.0):
                # one record the long way (which also learns the strings, time and frame)
                out.append(fields(t, node, _DROP, face, frame, None, None, None, None, reason,
                                  rssi, snr, None))
                continue
            out += (_MAP_HEADS[prefix[0] + 4], self._t_part, prefix[1], self._frame_part, part,
                    pack(rssi_key, 0xFB, rssi, snr_key, 0xFB, snr))
        return b"".join(out)

    @staticmethod
    def _whole(*fields: Any) -> bytes:
        """The slow path: cbor2 encodes the record's map."""
        return bytes(cbor2.dumps(Record(*fields).to_map()))


ZSTD_SUFFIX = ".zst"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


class _Unzstd(io.RawIOBase):
    """The decompressed bytes of a zstd file, as far as it goes: a file cut short (a
    ``.part`` of a killed gateway) gives everything up to its last whole block. Counts
    the bytes it gave out (record offsets in a compressed capture)."""

    def __init__(self, raw: IO[bytes]) -> None:
        import zstandard

        self._zstd = zstandard
        self.raw = raw
        self._d = zstandard.ZstdDecompressor().decompressobj()
        self._out = b""
        self.count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._out:
            chunk = self.raw.read(1 << 16)
            if not chunk:
                return 0
            while chunk:
                try:
                    self._out += self._d.decompress(chunk)
                except self._zstd.ZstdError as exc:
                    raise CaptureError(f"not zstd past here: {exc}") from None
                chunk = self._d.unused_data if self._d.eof else b""
                if self._d.eof:  # the next frame, if any
                    self._d = self._zstd.ZstdDecompressor().decompressobj()
        n = min(len(buffer), len(self._out))
        buffer[:n] = self._out[:n]
        self._out = self._out[n:]
        self.count += n
        return n


class CaptureStream:
    """A capture file opened for reading: the CBOR bytes (decompressed when the file is
    zstd, by its magic number, so ``.part`` files read too) and the decoded offset."""

    def __init__(self, path: Path) -> None:
        self.raw = open(path, "rb")  # noqa: SIM115 - closed in close()
        self.compressed = self.raw.peek(4)[:4] == ZSTD_MAGIC
        self._counted: _Unzstd | None = None
        if self.compressed:
            self._counted = _Unzstd(self.raw)
            self.fp: io.BufferedReader = io.BufferedReader(self._counted)
        else:
            self.fp = self.raw

    def at_end(self) -> bool:
        return not self.fp.peek(1)

    def tell(self) -> int:
        """Offset in the CBOR bytes of the next record."""
        if self._counted is None:
            return self.fp.tell()
        return self._counted.count - len(self.fp.peek(0))

    def close(self) -> None:
        self.fp.close()
        self.raw.close()


class CaptureWriter:
    """Append records to a capture file; the file appears under its name when closed.

    A name ending in ``.zst`` is written zstd-compressed (about a tenth of the size);
    readers tell the two apart by the first bytes, not by the name."""

    def __init__(self, path: str | os.PathLike[str], node: str, *, source: str = "gateway",
                 t0: float = 0.0, buffer_size: int = -1, **meta: Any) -> None:
        """``buffer_size``: of the file's write buffer (-1: Python's default; the
        simulator, which writes a gigabyte a simulated day, takes a larger one)."""
        self.path = Path(path)
        self.part = self.path.with_name(self.path.name + ".part")
        self._raw: IO[bytes] = open(self.part, "wb", buffering=buffer_size)  # noqa: SIM115
        self._zstd: Any = None
        self._fp: Any = self._raw  # the file, or a zstd stream writer on it
        if self.path.name.endswith(ZSTD_SUFFIX):
            import zstandard

            self._zstd = zstandard
            self._fp = zstandard.ZstdCompressor(level=3).stream_writer(self._raw,
                                                                       closefd=False)
        encoder = RecordEncoder()
        self._encode = encoder.encode
        self._fields = encoder.fields
        self._drops = encoder.drops
        self.count = 0
        header = {"format": FORMAT, "version": VERSION, "source": source, **meta}
        self.write(Record(t0, node, Direction.META, meta=header))

    def write(self, record: Record) -> None:
        if self._fp is None:
            raise CaptureError(f"capture {self.path} is closed")
        self._fp.write(self._encode(record))
        self.count += 1

    def write_fields(self, t: float, node: str, direction: Direction, face: str | None,
                     frame: bytes | None, kind: str | None, feed: bytes | None,
                     seq: int | None, cnr: int | None, reason: str | None,
                     rssi: float | None, snr: float | None, air: float | None) -> None:
        """``write(Record(t, node, direction, ...))`` without the Record (not META)."""
        if self._fp is None:
            raise CaptureError(f"capture {self.path} is closed")
        self._fp.write(self._fields(t, node, direction, face, frame, kind, feed, seq, cnr,
                                    reason, rssi, snr, air))
        self.count += 1

    def write_drops(self, t: float, face: str | None, frame: bytes | None,
                    items: list[tuple[str, str, float, float]]) -> None:
        """The drop records of one frame at several receivers: (node, reason, rssi, snr)
        for each, as ``write_fields`` would write them one by one."""
        if self._fp is None:
            raise CaptureError(f"capture {self.path} is closed")
        self._fp.write(self._drops(t, face, frame, items))
        self.count += len(items)

    def write_all(self, records: list[Record]) -> None:
        for r in records:
            self.write(r)

    def flush(self) -> None:
        if self._fp is not None:
            if self._zstd is not None:  # a whole block: readable up to here after a crash
                self._fp.flush(self._zstd.FLUSH_BLOCK)
            self._raw.flush()

    def close(self) -> None:
        """Make the capture durable and move it to its final name."""
        if self._fp is None:
            return
        if self._zstd is not None:
            self._fp.flush(self._zstd.FLUSH_FRAME)
            self._fp.close()
        self._raw.flush()
        os.fsync(self._raw.fileno())
        self._raw.close()
        self._fp = None
        os.replace(self.part, self.path)

    def abort(self) -> None:
        """Close without publishing: the partial file is removed."""
        if self._fp is not None:
            if self._zstd is not None:
                self._fp.close()
            self._raw.close()
            self._fp = None
            self.part.unlink(missing_ok=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.close()


class CaptureReader:
    """Stream the records of a capture file (or of a ``.part`` file still being written)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.torn = 0  # 1 if the file ends in the middle of a record
        self.meta: dict[str, Any] = {}

    def __iter__(self) -> Iterator[Record]:
        stream = CaptureStream(self.path)
        try:
            decoder = cbor2.CBORDecoder(stream.fp)
            first = True
            while True:
                start = stream.tell()
                if stream.at_end():
                    return
                try:
                    raw = decoder.decode()
                except cbor2.CBORDecodeEOF:
                    self.torn = 1
                    log.warning("%s: last record is torn at byte %d; ignoring it",
                                self.path, start)
                    return
                except cbor2.CBORDecodeError as exc:
                    raise CaptureError(f"{self.path}: not CBOR at byte {start}: {exc}") from exc
                record = Record.from_map(raw)
                if first:
                    first = False
                    if record.dir is not Direction.META or record.meta.get("format") != FORMAT:
                        raise CaptureError(f"{self.path} is not a tinySSB capture "
                                           "(no meta record first)")
                    if record.meta.get("version") != VERSION:
                        raise CaptureError(f"{self.path}: capture version "
                                           f"{record.meta.get('version')!r}, we read {VERSION}")
                    self.meta = record.meta
                yield record
        finally:
            stream.close()


def read_capture(path: str | os.PathLike[str]) -> Iterator[Record]:
    """The records of a capture, meta record first."""
    return iter(CaptureReader(path))


PCAP_LINKTYPE_USER0 = 147  # "reserved for private use": Wireshark shows the raw bytes


def export_pcap(records: Iterator[Record] | list[Record], out: str | os.PathLike[str]) -> int:
    """Write the frames of ``records`` (rx, drop, tx) as a classic pcap file.

    Link type USER0 (147); each packet is the frame as on the link. Returns the number of
    packets written. Written to ``<out>.part`` and renamed when complete.
    """
    target = Path(out)
    part = target.with_name(target.name + ".part")
    count = 0
    try:
        with open(part, "wb") as fp:
            fp.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535,
                                 PCAP_LINKTYPE_USER0))
            for r in records:
                if r.frame is None or r.dir not in (Direction.RX, Direction.DROP, Direction.TX):
                    continue
                seconds = max(r.t, 0.0)
                sec = int(seconds)
                usec = min(round((seconds - sec) * 1e6), 999_999)
                fp.write(struct.pack("<IIII", sec, usec, len(r.frame), len(r.frame)))
                fp.write(r.frame)
                count += 1
            fp.flush()
            os.fsync(fp.fileno())
        os.replace(part, target)
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    return count
