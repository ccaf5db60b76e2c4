"""The CRC32 trailer of tinySSB LoRa frames: reflected CRC-32 (poly 0xEDB88320), big-endian.

``binascii.crc32`` is used where the interpreter has it; ``crc32_table`` is the portable
table-driven version (the table is built on first use: 1 KiB as a list of ints).
"""

from tssbfw.compat import const

CRC_LEN = const(4)

_table = []


def _build_table() -> None:
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0xEDB88320 if c & 1 else c >> 1
        _table.append(c)


def crc32_table(data: bytes, crc: int = 0) -> int:
    """CRC-32 of ``data`` computed with a 256-entry table."""
    if not _table:
        _build_table()
    c = crc ^ 0xFFFFFFFF
    for byte in data:
        c = _table[(c ^ byte) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


try:
    from binascii import crc32 as _native
except ImportError:
    _native = None


def crc32(data: bytes) -> int:
    """CRC-32 of ``data`` as an unsigned 32-bit integer."""
    if _native is not None:
        return _native(data) & 0xFFFFFFFF
    return crc32_table(data)


def trailer(packet: bytes) -> bytes:
    """The 4-byte big-endian CRC32 of ``packet``."""
    return crc32(packet).to_bytes(4, "big")


def add(packet: bytes) -> bytes:
    """``packet`` followed by its trailer: the LoRa frame to transmit."""
    return bytes(packet) + trailer(packet)


def strip(frame: bytes):
    """The packet in front of a good trailer, or None for a short or corrupt frame.

    A frame needs at least one packet byte besides the trailer.
    """
    if len(frame) < CRC_LEN + 1:
        return None
    packet = frame[:-CRC_LEN]
    if trailer(packet) != bytes(frame[-CRC_LEN:]):
        return None
    return bytes(packet)
