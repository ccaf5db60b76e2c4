"""The firmware's framing and airtime held against the gateway's (CPython, hypothesis)."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st
from tssbfw import airtime, crc32, kiss
from tssbfw.radio import BANDWIDTHS

from gateway.wire import crc as gw_crc
from gateway.wire import kiss as gw_kiss
from gateway.wire.lora import LoRaParams
from gateway.wire.lora import airtime as gw_airtime


@given(st.binary(max_size=600))
def test_kiss_encode_matches_gateway(payload: bytes) -> None:
    assert kiss.encode(payload) == gw_kiss.kiss_encode(payload)


@settings(max_examples=200)
@given(st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\xc0", b"")) |
                st.sampled_from([b"\xc0", b"\xdb", b"\xdb\xdc", b"\xdb\x00", b"\xc0\xc0"]),
                max_size=40),
       st.integers(min_value=1, max_value=64))
def test_kiss_decoder_matches_gateway_on_any_stream(pieces: list[bytes], max_len: int) -> None:
    """Same frames and the same drop count as gateway.wire.kiss.KissDecoder, any input."""
    stream = b"".join(pieces)
    ours = kiss.Decoder(max_len)
    theirs = gw_kiss.KissDecoder(max_len)
    got, want = [], []
    for i in range(0, len(stream), 7):
        got += ours.feed(stream[i:i + 7])
        want += theirs.feed(stream[i:i + 7])
    assert got == want
    assert ours.errors == theirs.frames_dropped
    assert ours.frames == theirs.frames_ok


@given(st.binary(max_size=300))
def test_crc32_matches_gateway(packet: bytes) -> None:
    assert crc32.add(packet) == gw_crc.add_crc(packet)
    assert crc32.crc32_table(packet).to_bytes(4, "big") == gw_crc.crc32_trailer(packet)
    frame = gw_crc.add_crc(packet)
    assert crc32.strip(frame) == (packet if packet else None)


@settings(max_examples=400)
@given(st.integers(min_value=6, max_value=12), st.sampled_from(BANDWIDTHS),
       st.integers(min_value=5, max_value=8), st.integers(min_value=6, max_value=65535),
       st.integers(min_value=0, max_value=255))
def test_airtime_matches_gateway(sf: int, bw: int, cr: int, preamble: int, length: int) -> None:
    """tssbfw.airtime.airtime_us == gateway.wire.lora.airtime (rounded to 1 us)."""
    params = LoRaParams(868_300_000, bw, sf, cr, preamble=preamble)
    want = gw_airtime(params, length) * 1e6
    got = airtime.airtime_us(sf, bw, cr, preamble, length)
    assert abs(got - want) <= 0.5 + 1e-6 * want
    assert airtime.low_data_rate(sf, bw) == params.low_data_rate


def test_airtime_grid_matches_gateway() -> None:
    """Every profile-relevant combination exactly, not only sampled ones."""
    for sf in range(7, 13):
        for bw in BANDWIDTHS:
            for cr in range(5, 9):
                for length in (1, 5, 16, 60, 124, 255):
                    want = gw_airtime(LoRaParams(915_000_000, bw, sf, cr), length) * 1e6
                    got = airtime.airtime_us(sf, bw, cr, 8, length, sx126x=True)
                    assert math.isclose(got, want, abs_tol=0.5 + 1e-9 * want)
