"""Link framing: the CRC32 trailer and KISS escaping."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.wire.crc import CRC_LEN, add_crc, crc32_trailer, strip_crc
from gateway.wire.errors import FrameError
from gateway.wire.kiss import KissDecoder, kiss_encode, kiss_unescape

FAST = settings(max_examples=200, deadline=None)

# ------------------------------------------------------------------------------ CRC


def test_crc_check_value() -> None:
    assert crc32_trailer(b"123456789").hex() == "cbf43926"
    assert crc32_trailer(bytearray(b"123456789")) == crc32_trailer(memoryview(b"123456789"))


def test_add_and_strip() -> None:
    packet = bytes(range(120))
    frame = add_crc(packet)
    assert len(frame) == 124
    assert frame[-CRC_LEN:] == crc32_trailer(packet)
    assert strip_crc(frame) == packet
    assert add_crc(b"123456789").hex() == b"123456789".hex() + "cbf43926"


@pytest.mark.parametrize("length", [0, 1, 3, 4])
def test_short_frames_rejected(length: int) -> None:
    with pytest.raises(FrameError):
        strip_crc(bytes(length))


def test_min_packet_len() -> None:
    assert strip_crc(add_crc(b""), min_packet_len=0) == b""
    frame = add_crc(b"x" * 11)
    with pytest.raises(FrameError):
        strip_crc(frame, min_packet_len=12)
    assert strip_crc(frame, min_packet_len=11) == b"x" * 11


@FAST
@given(st.binary(min_size=1, max_size=124), st.data())
def test_any_flipped_bit_is_detected(packet: bytes, data: st.DataObject) -> None:
    frame = bytearray(add_crc(packet))
    bit = data.draw(st.integers(0, len(frame) * 8 - 1))
    frame[bit // 8] ^= 1 << (bit % 8)
    with pytest.raises(FrameError):
        strip_crc(frame)


@FAST
@given(st.binary(min_size=1, max_size=124))
def test_crc_round_trip(packet: bytes) -> None:
    assert strip_crc(add_crc(packet)) == packet


# ----------------------------------------------------------------------------- KISS


def test_kiss_vector() -> None:
    assert kiss_encode(bytes.fromhex("01c0db02")).hex() == "c001dbdcdbdd02c0"
    dec = KissDecoder()
    assert dec.feed(bytes.fromhex("c001dbdcdbdd02c0")) == [bytes.fromhex("01c0db02")]
    assert (dec.frames_ok, dec.frames_dropped) == (1, 0)


def test_kiss_vector_byte_by_byte() -> None:
    dec = KissDecoder()
    out: list[bytes] = []
    for byte in bytes.fromhex("c001dbdcdbdd02c0"):
        out += dec.feed(bytes((byte,)))
    assert out == [bytes.fromhex("01c0db02")]


def test_empty_frames_ignored() -> None:
    dec = KissDecoder()
    assert dec.feed(b"\xc0\xc0\xc0\xc0ab\xc0\xc0") == [b"ab"]
    assert (dec.frames_ok, dec.frames_dropped) == (1, 0)


def test_shared_fend_between_frames() -> None:
    dec = KissDecoder()
    assert dec.feed(b"\xc0a\xc0b\xc0") == [b"a", b"b"]


def test_bytes_before_first_fend_are_discarded() -> None:
    dec = KissDecoder()
    assert dec.feed(b"tail of old frame\xc0new\xc0") == [b"new"]
    assert dec.frames_dropped == 1
    dec.reset()
    assert dec.feed(b"junk") == []
    assert dec.feed(b"\xc0ok\xc0") == [b"ok"]


@pytest.mark.parametrize(
    "body",
    [b"a\xdb\x00b", b"a\xdb", b"\xdb\xdb\xdc", b"\xdb\xc1"],
    ids=["unknown-escape", "fesc-at-end", "double-fesc", "fesc-then-other"],
)
def test_bad_escape_drops_only_that_frame(body: bytes) -> None:
    dec = KissDecoder()
    stream = kiss_encode(b"first") + b"\xc0" + body + b"\xc0" + kiss_encode(b"last")
    assert dec.feed(stream) == [b"first", b"last"]
    assert (dec.frames_ok, dec.frames_dropped) == (2, 1)


def test_fesc_fend_ends_frame_as_dropped() -> None:
    dec = KissDecoder()
    assert dec.feed(b"\xc0abc\xdb\xc0ok\xc0") == [b"ok"]
    assert dec.frames_dropped == 1


def test_oversize_frames_dropped() -> None:
    dec = KissDecoder(max_payload=10)
    stream = kiss_encode(b"x" * 10) + kiss_encode(b"y" * 11) + kiss_encode(b"\xc0" * 6)
    stream += kiss_encode(b"z" * 5000) + kiss_encode(b"\xc0" * 10)
    # the limit applies to the unescaped payload: 10 x C0 (20 bytes escaped) still fits
    assert dec.feed(stream) == [b"x" * 10, b"\xc0" * 6, b"\xc0" * 10]
    assert (dec.frames_ok, dec.frames_dropped) == (3, 2)


def test_default_max_payload_fits_a_packet_with_crc() -> None:
    payload = add_crc(b"\xc0\xdb" * 60)
    dec = KissDecoder()
    assert dec.feed(kiss_encode(payload)) == [payload]


def test_oversize_split_across_chunks_does_not_accumulate() -> None:
    dec = KissDecoder(max_payload=16)
    dec.feed(b"\xc0")
    for _ in range(1000):
        assert dec.feed(b"x" * 100) == []
    assert len(dec._raw) <= 32  # internal buffer stays bounded
    assert dec.feed(b"\xc0ok\xc0") == [b"ok"]
    assert dec.frames_dropped == 1


def test_kiss_unescape() -> None:
    assert kiss_unescape(b"\x01\xdb\xdc\xdb\xdd\x02") == b"\x01\xc0\xdb\x02"
    assert kiss_unescape(b"\xdb") is None
    assert kiss_unescape(b"a\xc0") is None


def test_invalid_max_payload() -> None:
    with pytest.raises(ValueError):
        KissDecoder(max_payload=0)


@st.composite
def split_points(draw: st.DrawFn, stream: bytes) -> list[bytes]:
    cuts = sorted(draw(st.lists(st.integers(0, len(stream)), max_size=12)))
    bounds = [0, *cuts, len(stream)]
    return [stream[a:b] for a, b in itertools.pairwise(bounds)]


@FAST
@given(
    st.lists(st.binary(max_size=40) | st.sampled_from([b"\xc0", b"\xdb", b"\xdb\xdc"])), st.data()
)
def test_kiss_round_trip_any_split(payloads: list[bytes], data: st.DataObject) -> None:
    stream = b"".join(kiss_encode(p) for p in payloads)
    dec = KissDecoder()
    out: list[bytes] = []
    for chunk in data.draw(split_points(stream)):
        out += dec.feed(chunk)
    expected = [p for p in payloads if p]
    assert out == expected
    assert (dec.frames_ok, dec.frames_dropped) == (len(expected), 0)


@FAST
@given(st.lists(st.binary(max_size=64), max_size=8), st.integers(1, 64))
def test_random_bytes_never_raise(chunks: list[bytes], max_payload: int) -> None:
    dec = KissDecoder(max_payload=max_payload)
    for chunk in chunks:
        for frame in dec.feed(chunk):
            assert 0 < len(frame) <= max_payload
    assert dec.frames_ok >= 0 and dec.frames_dropped >= 0
