"""WANT and CHNK request packets (wire-compat.md section 4).

* WANT = WANT-DMX | BIPF list ``[offs, s0, s1, ...]``: ``si`` is the next sequence number
  wanted of the feed at GOSET index ``(offs + i) mod |set|``.
* CHNK = CHNK-DMX | BIPF list of ``[fndx, seq, cnr]`` triples: ``cnr`` is the next chunk
  wanted of entry ``seq`` of the feed at GOSET index ``fndx``.

Both DMX values come from the GOSET state (:func:`gateway.wire.goset.want_dmx`,
:func:`gateway.wire.goset.chnk_dmx`). Integers are written signed-minimal like the Python
reference and read as unsigned, so requests from ESP32/Android peers (unsigned-minimal
ints) decode right. Slots that are not non-negative integers are skipped, as the
references do.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import bipf
from .crc import Buffer
from .entry import DMX_LEN, PACKET_LEN
from .errors import BipfError, PacketError, VarintError
from .varint import decode_varint

MAX_PROTOCOL_INT = 2**24 - 1  # larger ints are misread by the ESP32/Android decoders


@dataclass(slots=True, frozen=True)
class Want:
    offset: int
    seqs: tuple[int | None, ...]  # None marks a slot that was not a usable integer

    def slots(self, set_size: int) -> list[tuple[int, int]]:
        """``(goset index, next seq wanted)`` for every usable slot, given our set size."""
        if set_size <= 0:
            return []
        return [((self.offset + i) % set_size, s) for i, s in enumerate(self.seqs)
                if s is not None and s > 0]


@dataclass(slots=True, frozen=True)
class ChunkRequest:
    fndx: int
    seq: int
    cnr: int


def _check_int(value: int) -> int:
    if not 0 <= value <= MAX_PROTOCOL_INT:
        raise PacketError(f"protocol integer out of range 0..2^24-1: {value}")
    return value


# the BIPF encodings of the smaller protocol integers (requests carry dozens of them, and
# a node builds a request every few seconds): bytes exactly as ``bipf.encode`` writes them
_SMALL_INTS = tuple(bipf.encode(v) for v in range(4096))


def _int_bipf(value: int) -> bytes:
    """``bipf.encode(value)`` of a protocol integer (checked)."""
    if 0 <= value < len(_SMALL_INTS):
        return _SMALL_INTS[value]
    return bipf.encode(_check_int(value))


def _list_bipf(items: list[bytes]) -> bytes:
    """A BIPF list of encoded items, as ``bipf.encode`` writes a list."""
    body = b"".join(items)
    return bipf.encode_tag(len(body), bipf.LIST) + body


def encode_want(dmx: bytes, offset: int, seqs: list[int] | tuple[int, ...]) -> bytes:
    return _packet(dmx, _list_bipf([_int_bipf(offset), *map(_int_bipf, seqs)]))


def encode_chnk(dmx: bytes, requests: list[ChunkRequest] | tuple[ChunkRequest, ...]) -> bytes:
    body = _list_bipf([_list_bipf([_int_bipf(r.fndx), _int_bipf(r.seq), _int_bipf(r.cnr)])
                       for r in requests])
    return _packet(dmx, body)


def _packet(dmx: bytes, body: bytes) -> bytes:
    if len(dmx) != DMX_LEN:
        raise PacketError(f"DMX is {DMX_LEN} bytes, got {len(dmx)}")
    packet = bytes(dmx) + body
    if len(packet) > PACKET_LEN:
        raise PacketError(f"request packet of {len(packet)} bytes exceeds {PACKET_LEN}")
    return packet


def _as_uint(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


_INT, _LIST = 2, 4


def _fast_ints(buf: bytes, pos: int, end: int) -> list[object] | None:
    """Read a BIPF list body of small unsigned ints and lists of them, without the
    general decoder; None when anything else shows up (the caller falls back)."""
    out: list[object] = []
    while pos < end:
        tag = buf[pos]
        if tag & 0x80:
            return None  # a multi-byte tag: leave it to the general decoder
        length, typ = tag >> 3, tag & 7
        pos += 1
        if pos + length > end:
            return None
        if typ == _INT and 1 <= length <= 8:
            out.append(int.from_bytes(buf[pos:pos + length], "little"))
        elif typ == _LIST:
            inner = _fast_ints(buf, pos, pos + length)
            if inner is None or any(isinstance(v, list) for v in inner):
                return None
            out.append(inner)
        else:
            return None
        pos += length
    return out


def _body(packet: bytes) -> list[object]:
    if len(packet) <= DMX_LEN:
        raise PacketError("request packet without a body")
    try:
        tag, pos = decode_varint(packet, DMX_LEN)
    except VarintError:
        tag, pos = 0, 0  # the general decoder below reports it
    if tag & 7 == _LIST and pos + (tag >> 3) <= len(packet):
        fast = _fast_ints(packet, pos, pos + (tag >> 3))
        if fast is not None:
            return fast
    try:
        value = bipf.decode(packet[DMX_LEN:], unsigned_ints=True)
    except BipfError as exc:
        raise PacketError(f"request body is not BIPF: {exc}") from exc
    if not isinstance(value, list):
        raise PacketError("request body is not a BIPF list")
    return value


# requests decoded lately (bytes packets only; forgotten all at once when full): every
# neighbour of the asker decodes the same request, in a simulated mesh one after the other
_DECODED_KEPT = 1024
_wants: dict[bytes, Want] = {}
_chnks: dict[bytes, tuple[ChunkRequest, ...]] = {}


def decode_want(packet: Buffer) -> Want:
    want = _wants.get(packet) if type(packet) is bytes else None
    if want is not None:
        return want  # (immutable)
    items = _body(packet if type(packet) is bytes else bytes(packet))
    if not items:
        raise PacketError("WANT list is empty")
    offset = _as_uint(items[0])
    if offset is None:
        raise PacketError("WANT offset is not a non-negative integer")
    want = Want(offset, tuple(_as_uint(v) for v in items[1:]))
    if type(packet) is bytes:
        if len(_wants) >= _DECODED_KEPT:
            _wants.clear()
        _wants[packet] = want
    return want


def decode_chnk(packet: Buffer) -> list[ChunkRequest]:
    known = _chnks.get(packet) if type(packet) is bytes else None
    if known is not None:
        return list(known)  # a list of its own for each caller
    requests = []
    for item in _body(packet if type(packet) is bytes else bytes(packet)):
        if not isinstance(item, list) or len(item) < 3:
            continue
        fndx, seq, cnr = [_as_uint(v) for v in item[:3]]
        if fndx is None or seq is None or cnr is None or seq == 0:
            continue
        requests.append(ChunkRequest(fndx, seq, cnr))
    if type(packet) is bytes:
        if len(_chnks) >= _DECODED_KEPT:
            _chnks.clear()
        _chnks[packet] = tuple(requests)
    return requests
