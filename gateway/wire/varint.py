"""Unsigned LEB128 varints, as used by BIPF tags and the chain20 length field."""

from .errors import VarintError

MAX_VARINT_BYTES = 10  # enough for any 64-bit value; longer encodings are rejected


def encode_varint(value: int) -> bytes:
    """Encode a non-negative integer as unsigned LEB128 (``0`` is ``b"\\x00"``)."""
    if value < 0:
        raise VarintError(f"varint must be non-negative, got {value}")
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def decode_varint(buf: bytes | bytearray | memoryview, pos: int = 0) -> tuple[int, int]:
    """Decode a varint at ``buf[pos:]``; return ``(value, position after it)``."""
    value = 0
    shift = 0
    end = len(buf)
    for i in range(MAX_VARINT_BYTES):
        if pos + i >= end:
            raise VarintError("truncated varint")
        byte = buf[pos + i]
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos + i + 1
        shift += 7
    raise VarintError(f"varint longer than {MAX_VARINT_BYTES} bytes")
