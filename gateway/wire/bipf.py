"""BIPF, the binary in-place format, in the dialect tinySSB puts on the wire.

Every value is ``varint((body_length << 3) | type)`` followed by its body:

====  ========  ==========================================================
type  name      body
====  ========  ==========================================================
0     STRING    UTF-8 bytes (the length is the UTF-8 byte count)
1     BYTES     raw bytes
2     INT       1..8 bytes, little-endian two's complement
3     DOUBLE    8-byte IEEE-754, little-endian
4     LIST      the encoded elements, concatenated
5     DICT      alternating encoded key and value; keys are atoms
6     BOOLNULL  empty = null, ``00`` = false, ``01`` = true
7     -         reserved, rejected
====  ========  ==========================================================

Integers are *encoded* with the minimal number of two's-complement bytes (as the
reference Python implementation does: 128 -> ``128000``). They are *decoded* signed by
default; ESP32 and Android peers write protocol integers (offset, seq, fndx, cnr) with
the minimal *unsigned* byte count (200 -> ``0ac8``), so :func:`decode` takes
``unsigned_ints=True`` to read every INT as an unsigned number. The 4-byte integers of
the original SSB (JavaScript) BIPF decode correctly with either reading of non-negative
values.

Decoding never raises anything but :class:`~gateway.wire.errors.BipfError` on malformed
input, does not recurse (nesting depth is bounded by ``max_depth`` and checked with an
explicit stack) and bounds the size of the value by ``max_size``.
"""

from __future__ import annotations

import struct
from typing import Any, NamedTuple

from .errors import BipfError, VarintError
from .varint import decode_varint, encode_varint

__all__ = [
    "BOOLNULL",
    "BYTES",
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_SIZE",
    "DICT",
    "DOUBLE",
    "INT",
    "LIST",
    "MAX_INT_BYTES",
    "STRING",
    "decode",
    "decode_at",
    "decode_exact",
    "encode",
    "encode_tag",
]

STRING = 0
BYTES = 1
INT = 2
DOUBLE = 3
LIST = 4
DICT = 5
BOOLNULL = 6
_RESERVED = 7

DEFAULT_MAX_DEPTH = 32
"""Deepest list/dict nesting accepted (a top-level list is depth 1)."""

DEFAULT_MAX_SIZE = 1 << 20
"""Largest encoded top-level value (tag included) accepted by the decoder, in bytes."""

MAX_INT_BYTES = 8

_DOUBLE = struct.Struct("<d")
_NULL = b"\x06"
_FALSE = b"\x0e\x00"
_TRUE = b"\x0e\x01"

Buffer = bytes | bytearray | memoryview


# --------------------------------------------------------------------------- encoding


def encode_tag(length: int, type_: int) -> bytes:
    """Return the varint tag announcing a body of ``length`` bytes of type ``type_``."""
    tag = (length << 3) | type_
    if tag < 0x80:
        return bytes((tag,))
    return encode_varint(tag)


def encode(value: Any, *, max_depth: int = DEFAULT_MAX_DEPTH) -> bytes:
    """Encode ``value`` as BIPF.

    Accepted: ``None``, ``bool``, ``int`` (must fit in 8 signed bytes), ``float``,
    ``str``, ``bytes``/``bytearray``/``memoryview``, ``list``/``tuple`` and ``dict``
    (whose keys must be atoms, i.e. not lists, tuples or dicts). Dict order is kept.
    Nesting deeper than ``max_depth`` (including a container that contains itself)
    raises :class:`BipfError`, as does any unsupported type.
    """
    return _encode(value, max_depth)


def _encode(value: Any, depth_left: int) -> bytes:
    # bool first: it is a subclass of int
    if value is None:
        return _NULL
    if value is True:
        return _TRUE
    if value is False:
        return _FALSE
    if isinstance(value, int):
        return _encode_int(value)
    if isinstance(value, str):
        return _encode_str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        return encode_tag(len(raw), BYTES) + raw
    if isinstance(value, float):
        return encode_tag(8, DOUBLE) + _DOUBLE.pack(value)
    if isinstance(value, (list, tuple)):
        return _encode_list(value, depth_left)
    if isinstance(value, dict):
        return _encode_dict(value, depth_left)
    raise BipfError(f"cannot BIPF-encode a {type(value).__name__}")


def _encode_int(value: int) -> bytes:
    nbytes = (value if value >= 0 else ~value).bit_length() // 8 + 1
    if nbytes > MAX_INT_BYTES:
        raise BipfError(f"integer {value} does not fit in {MAX_INT_BYTES} signed bytes")
    return encode_tag(nbytes, INT) + value.to_bytes(nbytes, "little", signed=True)


def _encode_str(value: str) -> bytes:
    try:
        raw = value.encode("utf-8")
    except UnicodeEncodeError as exc:  # lone surrogates
        raise BipfError(f"string is not encodable as UTF-8: {exc}") from None
    return encode_tag(len(raw), STRING) + raw


def _encode_list(value: list[Any] | tuple[Any, ...], depth_left: int) -> bytes:
    if depth_left <= 0:
        raise BipfError("nesting too deep to encode")
    body = b"".join([_encode(item, depth_left - 1) for item in value])
    return encode_tag(len(body), LIST) + body


def _encode_dict(value: dict[Any, Any], depth_left: int) -> bytes:
    if depth_left <= 0:
        raise BipfError("nesting too deep to encode")
    parts: list[bytes] = []
    for key, item in value.items():
        if isinstance(key, (list, tuple, dict)):
            raise BipfError(f"dict key must be an atom, not a {type(key).__name__}")
        parts.append(_encode(key, 0))
        parts.append(_encode(item, depth_left - 1))
    body = b"".join(parts)
    return encode_tag(len(body), DICT) + body


# --------------------------------------------------------------------------- decoding


class _Frame(NamedTuple):
    """An open list or dict while decoding: its items so far and where its body ends."""

    items: list[Any]
    end: int
    is_dict: bool


def decode(
    buf: Buffer,
    *,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_size: int = DEFAULT_MAX_SIZE,
    unsigned_ints: bool = False,
) -> Any:
    """Decode the BIPF value at the start of ``buf``; trailing bytes are ignored.

    This matches every tinySSB implementation (zero padding after a WANT or CHNK list
    is harmless). With ``unsigned_ints=True`` each INT is read as an unsigned number,
    which is how protocol integers from ESP32/Android peers must be read.
    Raises :class:`BipfError` on malformed input.
    """
    value, _ = decode_at(
        buf, 0, max_depth=max_depth, max_size=max_size, unsigned_ints=unsigned_ints
    )
    return value


def decode_exact(
    buf: Buffer,
    *,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_size: int = DEFAULT_MAX_SIZE,
    unsigned_ints: bool = False,
) -> Any:
    """Like :func:`decode`, but ``buf`` must hold exactly one value and nothing else."""
    data = _as_bytes(buf)
    value, end = decode_at(
        data, 0, max_depth=max_depth, max_size=max_size, unsigned_ints=unsigned_ints
    )
    if end != len(data):
        raise BipfError(f"{len(data) - end} trailing byte(s) after the BIPF value")
    return value


def decode_at(
    buf: Buffer,
    pos: int = 0,
    *,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_size: int = DEFAULT_MAX_SIZE,
    unsigned_ints: bool = False,
) -> tuple[Any, int]:
    """Decode one BIPF value starting at ``buf[pos]``; return ``(value, end position)``.

    Containers are decoded with an explicit stack, so hostile nesting yields a
    :class:`BipfError` (beyond ``max_depth``) rather than a ``RecursionError``.
    """
    data = _as_bytes(buf)
    total = len(data)
    if not 0 <= pos <= total:
        raise BipfError(f"start position {pos} outside a buffer of {total} bytes")
    stack: list[_Frame] = []
    limit = total
    while True:
        start = pos
        typ, body, pos = _read_header(data, pos, limit)
        if not stack and pos - start > max_size:
            raise BipfError(f"BIPF value of {pos - start} bytes exceeds max_size {max_size}")
        if typ == LIST or typ == DICT:
            _check_open(stack, max_depth)
            stack.append(_Frame([], pos, typ == DICT))
            pos = body
        else:
            value = _decode_atom(data, typ, body, pos, unsigned_ints)
            if not stack:
                return value, pos
            stack[-1].items.append(value)
        # close every container whose body is now complete
        while pos == stack[-1].end:
            value = _close(stack.pop())
            if not stack:
                return value, pos
            stack[-1].items.append(value)
        limit = stack[-1].end


def _as_bytes(buf: Buffer) -> bytes:
    """Return ``buf`` as ``bytes`` (no copy when it already is; packets are small)."""
    return buf if isinstance(buf, bytes) else bytes(buf)


def _read_header(data: bytes, pos: int, limit: int) -> tuple[int, int, int]:
    """Read a tag at ``pos``; return ``(type, body start, body end)``, all within limit."""
    if pos >= limit:
        raise BipfError("truncated BIPF value: tag missing")
    tag = data[pos]
    if tag < 0x80:
        body = pos + 1
    else:
        try:
            tag, body = decode_varint(data, pos)
        except VarintError as exc:
            raise BipfError(f"bad BIPF tag: {exc}") from None
    end = body + (tag >> 3)
    if end > limit:
        raise BipfError(
            f"BIPF body of {tag >> 3} bytes at offset {body} overruns its container or buffer"
        )
    return tag & 7, body, end


def _check_open(stack: list[_Frame], max_depth: int) -> None:
    """Reject opening a container too deep or in the key position of a dict."""
    if len(stack) >= max_depth:
        raise BipfError(f"BIPF nesting deeper than max_depth={max_depth}")
    if stack:
        parent = stack[-1]
        if parent.is_dict and not len(parent.items) & 1:
            raise BipfError("BIPF dict key must be an atom, not a list or dict")


def _close(frame: _Frame) -> list[Any] | dict[Any, Any]:
    items = frame.items
    if not frame.is_dict:
        return items
    if len(items) & 1:
        raise BipfError("BIPF dict has a key without a value")
    return dict(zip(items[0::2], items[1::2]))


def _decode_atom(data: bytes, typ: int, start: int, end: int, unsigned: bool) -> Any:
    length = end - start
    if typ == INT:
        if not 1 <= length <= MAX_INT_BYTES:
            raise BipfError(f"BIPF int of {length} bytes (must be 1..{MAX_INT_BYTES})")
        return int.from_bytes(data[start:end], "little", signed=not unsigned)
    if typ == BYTES:
        return data[start:end]
    if typ == STRING:
        try:
            return data[start:end].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BipfError(f"BIPF string is not valid UTF-8: {exc}") from None
    if typ == BOOLNULL:
        return _decode_boolnull(data, start, length)
    if typ == DOUBLE:
        if length != 8:
            raise BipfError(f"BIPF double of {length} bytes (must be 8)")
        return _DOUBLE.unpack_from(data, start)[0]
    raise BipfError(f"reserved BIPF type {typ}")


def _decode_boolnull(data: bytes, start: int, length: int) -> bool | None:
    if length == 0:
        return None
    if length == 1:
        byte = data[start]
        if byte == 0:
            return False
        if byte == 1:
            return True
        raise BipfError(f"BIPF boolean byte {byte:#04x} (must be 0 or 1)")
    raise BipfError(f"BIPF bool/null of {length} bytes (must be 0 or 1)")
