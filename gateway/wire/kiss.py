"""KISS framing, as used on Bluetooth-SPP and USB-serial links.

A frame is ``FEND`` + escaped payload + ``FEND``. Inside the payload ``FEND`` (0xC0) is
sent as ``FESC TFEND`` (0xDB 0xDC) and ``FESC`` (0xDB) as ``FESC TFESC`` (0xDB 0xDD).
tinySSB uses no KISS port/command byte: the payload is the packet (plus its CRC32
trailer on ESP32 SPP links).
"""

from __future__ import annotations

import logging

__all__ = [
    "DEFAULT_MAX_PAYLOAD",
    "FEND",
    "FESC",
    "TFEND",
    "TFESC",
    "KissDecoder",
    "kiss_encode",
    "kiss_unescape",
]

log = logging.getLogger(__name__)

FEND = 0xC0
FESC = 0xDB
TFEND = 0xDC
TFESC = 0xDD

_FEND_B = bytes((FEND,))
_FESC_B = bytes((FESC,))
_ESC_FEND = bytes((FESC, TFEND))
_ESC_FESC = bytes((FESC, TFESC))

DEFAULT_MAX_PAYLOAD = 512
"""Largest unescaped payload the decoder accepts (a 120-B packet + CRC fits easily)."""

Buffer = bytes | bytearray | memoryview


def kiss_encode(payload: Buffer) -> bytes:
    """Return ``payload`` escaped and wrapped in ``FEND`` bytes."""
    escaped = bytes(payload).replace(_FESC_B, _ESC_FESC).replace(_FEND_B, _ESC_FEND)
    return _FEND_B + escaped + _FEND_B


def kiss_unescape(escaped: Buffer) -> bytes | None:
    """Undo the escaping of one frame body (without its ``FEND`` delimiters).

    Returns ``None`` when the body holds an unknown escape sequence, a ``FESC`` at its
    end, or a bare ``FEND``.
    """
    data = bytes(escaped)
    if _FEND_B in data:
        return None
    first, *rest = data.split(_FESC_B)
    out = [first]
    for piece in rest:  # each piece followed a FESC
        if piece[:1] == b"\xdc":
            out.append(_FEND_B)
        elif piece[:1] == b"\xdd":
            out.append(_FESC_B)
        else:
            return None
        out.append(piece[1:])
    return b"".join(out)


class KissDecoder:
    """Split a KISS byte stream, fed in arbitrary chunks, into payloads.

    Bytes before the first ``FEND`` (the tail of a frame we joined halfway) are
    discarded. Empty frames (``FEND FEND``) are skipped silently. A frame with a broken
    escape sequence, or whose payload exceeds ``max_payload`` bytes, is dropped and
    counted in :attr:`frames_dropped`; each good frame counts in :attr:`frames_ok`.
    """

    __slots__ = ("_overflow", "_raw", "_synced", "frames_dropped", "frames_ok", "max_payload")

    def __init__(self, max_payload: int = DEFAULT_MAX_PAYLOAD) -> None:
        if max_payload < 1:
            raise ValueError(f"max_payload must be positive, got {max_payload}")
        self.max_payload = max_payload
        self.frames_ok = 0
        self.frames_dropped = 0
        self._raw = bytearray()  # escaped bytes of the frame in progress
        self._synced = False  # seen a FEND yet?
        self._overflow = False  # frame in progress is already too long

    def reset(self) -> None:
        """Forget any partial frame and wait for the next ``FEND`` (counters are kept)."""
        self._raw.clear()
        self._synced = False
        self._overflow = False

    def feed(self, data: Buffer) -> list[bytes]:
        """Consume ``data``; return the payloads of the frames it completed, in order."""
        frames: list[bytes] = []
        first, *rest = bytes(data).split(_FEND_B)
        self._extend(first)
        for piece in rest:  # every piece after the first follows a FEND
            payload = self._end_frame()
            if payload is not None:
                frames.append(payload)
            self._extend(piece)
        return frames

    def _extend(self, piece: bytes) -> None:
        if not piece or self._overflow:
            return
        self._raw += piece
        # an unescaped byte takes at most two escaped ones
        if len(self._raw) > 2 * self.max_payload:
            self._overflow = True
            self._raw.clear()

    def _end_frame(self) -> bytes | None:
        """Handle a ``FEND``: return the finished payload, or ``None`` if there is none."""
        raw, overflow, synced = bytes(self._raw), self._overflow, self._synced
        self._raw.clear()
        self._overflow = False
        self._synced = True
        if not raw and not overflow:
            return None  # empty frame (or a stream starting with FEND)
        payload = None if overflow or not synced else kiss_unescape(raw)
        if payload is not None and len(payload) <= self.max_payload:
            self.frames_ok += 1
            return payload
        self.frames_dropped += 1
        log.debug("KISS frame dropped: %s", self._drop_reason(synced, overflow, payload))
        return None

    def _drop_reason(self, synced: bool, overflow: bool, payload: bytes | None) -> str:
        if not synced:
            return "bytes before the first FEND"
        if overflow or payload is not None:
            return f"payload longer than {self.max_payload} bytes"
        return "bad escape sequence"
