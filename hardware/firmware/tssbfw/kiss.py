"""KISS framing: ``C0 | escaped payload | C0``; ``C0 -> DB DC``, ``DB -> DB DD``.

The decoder is a byte-at-a-time state machine with a bounded buffer, so a stream of
garbage cannot make it allocate more than ``max_len`` bytes. It drops and counts (in
``errors``) frames with a bad escape, frames longer than ``max_len`` and bytes that
arrived before the first ``C0``; empty frames are ignored.
"""

from tssbfw.compat import const

FEND = const(0xC0)
FESC = const(0xDB)
TFEND = const(0xDC)
TFESC = const(0xDD)

MAX_FRAME = const(512)


def encode(payload: bytes) -> bytes:
    """Return ``payload`` escaped and wrapped in FEND bytes."""
    body = bytes(payload).replace(b"\xdb", b"\xdb\xdd").replace(b"\xc0", b"\xdb\xdc")
    return b"\xc0" + body + b"\xc0"


class Decoder:
    """Streaming KISS decoder: ``feed(data)`` returns the frames that ``data`` completed."""

    def __init__(self, max_len: int = MAX_FRAME) -> None:
        self.max_len = max_len
        self.errors = 0
        self.frames = 0
        self._buf = bytearray()
        self._synced = False  # seen a FEND yet
        self._seen = False  # bytes since the last FEND
        self._esc = False  # last byte was FESC
        self._bad = False  # frame in progress is broken (bad escape or too long)

    def reset(self) -> None:
        """Forget a partial frame and wait for the next FEND (counters are kept)."""
        self._buf = bytearray()
        self._synced = False
        self._seen = False
        self._esc = False
        self._bad = False

    def feed(self, data: bytes) -> list:
        out = []
        for byte in data:
            if byte == FEND:
                frame = self._end()
                if frame is not None:
                    out.append(frame)
                continue
            self._seen = True
            if not self._synced or self._bad:
                continue
            if self._esc:
                self._esc = False
                if byte == TFEND:
                    byte = FEND
                elif byte == TFESC:
                    byte = FESC
                else:
                    self._bad = True
                    continue
            elif byte == FESC:
                self._esc = True
                continue
            if len(self._buf) >= self.max_len:
                self._bad = True
                self._buf = bytearray()
                continue
            self._buf.append(byte)
        return out

    def _end(self):
        seen, synced = self._seen, self._synced
        broken = self._bad or self._esc or not synced
        frame = bytes(self._buf)
        self._buf = bytearray()
        self._seen = False
        self._esc = False
        self._bad = False
        self._synced = True
        if not seen:
            return None
        if broken:
            self.errors += 1
            return None
        self.frames += 1
        return frame
