"""The box stream, sans-I/O: every message encrypted and authenticated after SHS.

One direction of a connection is one box stream with its own key and starting nonce
(from :class:`~.shs.Session`). Each message (the Scuttlebutt protocol guide, section
"Box stream") is

* a 34-byte *header*: a secret box, nonce ``n``, around ``length (2 B, big-endian) ||
  body MAC (16 B)``;
* the *body*: the body's secret box, nonce ``n + 1``, without its 16-byte MAC (the
  header carries it), 1 to 4096 bytes.

The nonce is a 24-byte big-endian counter that goes up by one per box, so the next
header uses ``n + 2``. The stream ends with the *goodbye*: a header around 18 zero
bytes. Every box depends on its place in the stream, so a replayed, reordered, dropped
or altered box fails to open: :class:`BoxStreamError`, and the stream is dead.
"""

from __future__ import annotations

from nacl.bindings import crypto_secretbox, crypto_secretbox_open
from nacl.exceptions import CryptoError

__all__ = ["GOODBYE", "HEADER_LEN", "MAX_BODY", "BoxDecoder", "BoxEncoder", "BoxStreamError"]

HEADER_LEN = 34  # 16 B MAC + 2 B length + 16 B body MAC
MAC_LEN = 16
MAX_BODY = 4096
NONCE_LEN = 24
GOODBYE = bytes(18)  # the header's plain text that ends a stream
_NONCE_MOD = 1 << (8 * NONCE_LEN)


class BoxStreamError(Exception):
    """A box that did not open, a bad length, or bytes after the goodbye."""


def _nonce_int(nonce: bytes) -> int:
    if len(nonce) != NONCE_LEN:
        raise ValueError(f"a box-stream nonce is {NONCE_LEN} bytes, got {len(nonce)}")
    return int.from_bytes(nonce, "big")


def _check_key(key: bytes) -> bytes:
    if len(key) != 32:
        raise ValueError(f"a box-stream key is 32 bytes, got {len(key)}")
    return bytes(key)


class BoxEncoder:
    """Our direction: bodies in, the bytes to write out."""

    __slots__ = ("_key", "_n", "closed")

    def __init__(self, key: bytes, nonce: bytes) -> None:
        self._key = _check_key(key)
        self._n = _nonce_int(nonce)
        self.closed = False

    @property
    def nonce(self) -> bytes:
        """The nonce of the next header."""
        return self._n.to_bytes(NONCE_LEN, "big")

    def _next(self) -> bytes:
        n = self._n
        self._n = (n + 1) % _NONCE_MOD
        return n.to_bytes(NONCE_LEN, "big")

    def encode(self, body: bytes) -> bytes:
        """One message: the header box followed by the body's cipher text."""
        if self.closed:
            raise BoxStreamError("the stream is closed (goodbye sent)")
        if not 0 < len(body) <= MAX_BODY:
            raise ValueError(f"a box-stream body is 1 to {MAX_BODY} bytes, got {len(body)}")
        header_nonce = self._next()
        boxed = crypto_secretbox(body, self._next(), self._key)
        header = crypto_secretbox(len(body).to_bytes(2, "big") + boxed[:MAC_LEN],
                                  header_nonce, self._key)
        return header + boxed[MAC_LEN:]

    def goodbye(self) -> bytes:
        """The header that ends the stream; nothing can be encoded after it."""
        if self.closed:
            raise BoxStreamError("the stream is closed (goodbye sent)")
        self.closed = True
        return crypto_secretbox(GOODBYE, self._next(), self._key)


class BoxDecoder:
    """The peer's direction: bytes as they arrive in, whole bodies out.

    :meth:`receive_data` returns the bodies completed by the bytes given; after the
    goodbye :attr:`closed` is true. A bad box raises :class:`BoxStreamError` (and so
    does every later call).
    """

    __slots__ = ("_buf", "_header", "_key", "_n", "closed", "failure")

    def __init__(self, key: bytes, nonce: bytes) -> None:
        self._key = _check_key(key)
        self._n = _nonce_int(nonce)
        self._buf = bytearray()
        self._header: tuple[int, bytes] | None = None  # (body length, body MAC)
        self.closed = False
        self.failure: str | None = None

    @property
    def buffered(self) -> int:
        """Bytes held back until the rest of their box arrives."""
        return len(self._buf)

    def _next(self) -> bytes:
        n = self._n
        self._n = (n + 1) % _NONCE_MOD
        return n.to_bytes(NONCE_LEN, "big")

    def _fail(self, reason: str) -> BoxStreamError:
        self.failure = reason
        self._buf.clear()
        return BoxStreamError(reason)

    def receive_data(self, data: bytes) -> list[bytes]:
        if self.failure is not None:
            raise BoxStreamError(self.failure)
        if self.closed:
            if data:
                raise self._fail(f"{len(data)} bytes after the goodbye")
            return []
        buf = self._buf
        buf += data
        bodies: list[bytes] = []
        pos = 0
        key = self._key
        while True:
            if self._header is None:
                if len(buf) - pos < HEADER_LEN:
                    break
                try:
                    plain = crypto_secretbox_open(bytes(buf[pos:pos + HEADER_LEN]),
                                                  self._next(), key)
                except CryptoError:
                    raise self._fail("a header box did not open (tampered, replayed or "
                                     "out of order)") from None
                pos += HEADER_LEN
                if plain == GOODBYE:
                    self.closed = True
                    if len(buf) > pos:
                        raise self._fail(f"{len(buf) - pos} bytes after the goodbye")
                    break
                length = int.from_bytes(plain[:2], "big")
                if not 0 < length <= MAX_BODY:
                    raise self._fail(f"a header announces a {length}-byte body "
                                     f"(1 to {MAX_BODY} allowed)")
                self._header = (length, plain[2:])
            length, mac = self._header
            if len(buf) - pos < length:
                break
            try:
                body = crypto_secretbox_open(mac + bytes(buf[pos:pos + length]),
                                             self._next(), key)
            except CryptoError:
                raise self._fail("a body box did not open (tampered)") from None
            pos += length
            self._header = None
            bodies.append(body)
        del buf[:pos]
        return bodies
