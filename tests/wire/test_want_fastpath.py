"""The WANT/CHNK fast path reads exactly what the general BIPF decoder reads."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gateway.wire import bipf
from gateway.wire.varint import encode_varint
from gateway.wire.want import _body

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
