"""The WANT/CHNK fast path reads exactly what the general BIPF decoder reads."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.wire import bipf
from gateway.wire.crc import add_crc, strip_crc
from gateway.wire.entry import hash20
from gateway.wire.errors import FrameError
from gateway.wire.varint import encode_varint
from gateway.wire.want import (
    ChunkRequest,
    _body,
    decode_chnk,
    decode_want,
    encode_chnk,
    encode_want,
)

ints = st.integers(0, 2**32 - 1)
items = st.lists(st.one_of(ints, st.lists(ints, max_size=4)), max_size=30)
DMX = bytes(7)


def general(packet: bytes) -> object:
    return bipf.decode(packet[7:], unsigned_ints=True)


@given(items, st.binary(max_size=5))
def test_fast_path_matches_the_general_decoder(value: list[object], tail: bytes) -> None:
    packet = DMX + bipf.encode(value) + tail
    assert _body(packet) == general(packet)


@given(st.lists(st.integers(0, 2**24 - 1), max_size=8))
def test_unsigned_minimal_ints_from_esp32_peers(values: list[int]) -> None:
    # ESP32/Android write the minimal unsigned byte count: 200 is 0a c8
    body = b"".join(bytes([(max(1, (v.bit_length() + 7) // 8) << 3) | 2])
                    + v.to_bytes(max(1, (v.bit_length() + 7) // 8), "little") for v in values)
    packet = DMX + encode_varint(len(body) << 3 | 4) + body
    assert _body(packet) == values


def test_decoded_requests_are_remembered_but_never_shared_mutably() -> None:
    """Every neighbour of an asker decodes the same request: decode_want/decode_chnk
    remember recent packets; each caller still gets a CHNK list of its own."""
    want = encode_want(DMX, 3, [1, 0, 7])
    assert decode_want(want) is decode_want(want)  # immutable: shared
    assert decode_want(want).offset == 3 and decode_want(want).seqs == (1, 0, 7)
    chnk = encode_chnk(DMX, [ChunkRequest(0, 2, 1), ChunkRequest(4, 1, 0)])
    first = decode_chnk(chnk)
    first.clear()
    assert decode_chnk(chnk) == [ChunkRequest(0, 2, 1), ChunkRequest(4, 1, 0)]
    assert decode_chnk(bytearray(chnk)) == decode_chnk(chnk)  # a buffer: not remembered


def test_strip_crc_and_hash20_remember_only_immutable_input() -> None:
    frame = bytearray(add_crc(b"x" * 40))
    assert strip_crc(frame) == b"x" * 40
    frame[0] ^= 1  # the same object, changed: checked again
    with pytest.raises(FrameError, match="CRC"):
        strip_crc(frame)
    frozen = add_crc(b"y" * 40)
    assert strip_crc(frozen) is strip_crc(frozen)
    buf = bytearray(b"z" * 120)
    h = hash20(buf)
    buf[0] = 0
    assert hash20(buf) != h and hash20(bytes(buf)) == hash20(buf)
