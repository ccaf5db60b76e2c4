"""The box stream: published vectors, round trips, and every altered box refused."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nacl.bindings import crypto_secretbox

from gateway.secure.boxstream import (
    HEADER_LEN,
    MAX_BODY,
    BoxDecoder,
    BoxEncoder,
    BoxStreamError,
)

# test vectors of box-stream-c (github.com/AljoschaMeyer/box-stream-c, src/test.c)
KEY = bytes([162, 29, 153, 150, 123, 225, 10, 173, 175, 201, 160, 34, 190, 179, 158, 14, 176,
             105, 232, 238, 97, 66, 133, 194, 250, 148, 199, 7, 34, 157, 174, 24])
NONCE = bytes([44, 140, 79, 227, 23, 153, 202, 203, 81, 40, 114, 59, 56, 167, 63, 166, 201, 9,
               50, 152, 0, 255, 226, 147])
PLAIN1 = bytes([0, 1, 2, 3, 4, 5, 6, 7])
PLAIN2 = bytes([7, 6, 5, 4, 3, 2, 1, 0])
HEADER1 = bytes([181, 28, 106, 117, 226, 186, 113, 206, 135, 153, 250, 54, 221, 225, 178, 211,
                 144, 190, 14, 102, 102, 246, 118, 54, 195, 34, 174, 182, 190, 45, 129, 48, 96,
                 193])
BODY1 = bytes([231, 234, 80, 195, 113, 173, 5, 158])
HEADER2 = bytes([227, 230, 249, 230, 176, 170, 49, 34, 220, 29, 156, 118, 225, 243, 7, 3, 163,
                 197, 125, 225, 240, 111, 195, 126, 240, 148, 201, 237, 158, 158, 134, 224,
                 246, 137])
BODY2 = bytes([22, 134, 141, 191, 19, 113, 211, 114])
FINAL = bytes([10, 48, 84, 111, 103, 103, 35, 162, 175, 78, 189, 58, 240, 250, 196, 226, 194,
               197, 87, 73, 119, 174, 129, 124, 225, 30, 3, 26, 37, 221, 87, 213, 153, 123])
STREAM = HEADER1 + BODY1 + HEADER2 + BODY2 + FINAL


def test_encoder_reproduces_the_box_stream_c_vectors() -> None:
    enc = BoxEncoder(KEY, NONCE)
    assert enc.encode(PLAIN1) == HEADER1 + BODY1
    assert enc.encode(PLAIN2) == HEADER2 + BODY2
    assert enc.goodbye() == FINAL
    with pytest.raises(BoxStreamError):
        enc.encode(PLAIN1)


def test_decoder_reads_the_box_stream_c_vectors() -> None:
    dec = BoxDecoder(KEY, NONCE)
    assert dec.receive_data(STREAM) == [PLAIN1, PLAIN2]
    assert dec.closed and dec.buffered == 0


def test_decoder_takes_the_vectors_one_byte_at_a_time() -> None:
    dec = BoxDecoder(KEY, NONCE)
    bodies = [b for i in range(len(STREAM)) for b in dec.receive_data(STREAM[i:i + 1])]
    assert bodies == [PLAIN1, PLAIN2] and dec.closed


def test_every_bit_flip_of_every_box_is_refused() -> None:
    enc = BoxEncoder(KEY, NONCE)
    stream = enc.encode(bytes(range(120))) + enc.encode(b"x" * 7) + enc.goodbye()
    for bit in range(len(stream) * 8):
        bad = bytearray(stream)
        bad[bit // 8] ^= 1 << (bit % 8)
        dec = BoxDecoder(KEY, NONCE)
        with pytest.raises(BoxStreamError):
            dec.receive_data(bytes(bad))
        with pytest.raises(BoxStreamError):  # and the stream stays dead
            dec.receive_data(b"")


def test_a_replayed_box_is_refused() -> None:
    enc = BoxEncoder(KEY, NONCE)
    first = enc.encode(b"entry")
    dec = BoxDecoder(KEY, NONCE)
    assert dec.receive_data(first) == [b"entry"]
    with pytest.raises(BoxStreamError, match="header box did not open"):
        dec.receive_data(first)


def test_reordered_boxes_are_refused() -> None:
    enc = BoxEncoder(KEY, NONCE)
    first, second = enc.encode(b"one"), enc.encode(b"two")
    with pytest.raises(BoxStreamError):
        BoxDecoder(KEY, NONCE).receive_data(second + first)


def test_a_truncated_stream_is_neither_closed_nor_delivered() -> None:
    enc = BoxEncoder(KEY, NONCE)
    message = enc.encode(b"a frame of 120 bytes" * 6)
    dec = BoxDecoder(KEY, NONCE)
    assert dec.receive_data(message[:-1]) == []
    assert not dec.closed and dec.buffered > 0  # the link sees an end without goodbye


def test_bytes_after_the_goodbye_are_refused() -> None:
    enc = BoxEncoder(KEY, NONCE)
    goodbye = enc.goodbye()
    with pytest.raises(BoxStreamError, match="after the goodbye"):
        BoxDecoder(KEY, NONCE).receive_data(goodbye + b"\x00")
    dec = BoxDecoder(KEY, NONCE)
    dec.receive_data(goodbye)
    with pytest.raises(BoxStreamError, match="after the goodbye"):
        dec.receive_data(b"more")


def test_a_header_announcing_an_oversize_body_is_refused() -> None:
    header = crypto_secretbox((MAX_BODY + 1).to_bytes(2, "big") + bytes(16), NONCE, KEY)
    with pytest.raises(BoxStreamError, match="4097-byte body"):
        BoxDecoder(KEY, NONCE).receive_data(header)


@pytest.mark.parametrize("size", [0, MAX_BODY + 1])
def test_the_encoder_refuses_bodies_out_of_range(size: int) -> None:
    with pytest.raises(ValueError, match="1 to 4096"):
        BoxEncoder(KEY, NONCE).encode(bytes(size))


def test_the_nonce_counter_carries_and_wraps() -> None:
    start = bytes([255] * 22 + [253, 0])  # box-stream-c's boundary test
    enc = BoxEncoder(KEY, start)
    for _ in range(300):
        enc.encode(b"z")
    assert enc.nonce == (int.from_bytes(start, "big") + 600).to_bytes(24, "big")
    top = BoxEncoder(KEY, bytes([255] * 24))
    message = top.encode(b"wrap")
    assert top.nonce == (1).to_bytes(24, "big")
    assert BoxDecoder(KEY, bytes([255] * 24)).receive_data(message) == [b"wrap"]


@settings(max_examples=60, deadline=None)
@given(bodies=st.lists(st.binary(min_size=1, max_size=300), max_size=12),
       cuts=st.lists(st.integers(min_value=0, max_value=5000), max_size=8),
       key=st.binary(min_size=32, max_size=32), nonce=st.binary(min_size=24, max_size=24))
def test_round_trip_whatever_the_reads(bodies: list[bytes], cuts: list[int], key: bytes,
                                       nonce: bytes) -> None:
    enc = BoxEncoder(key, nonce)
    stream = b"".join(enc.encode(b) for b in bodies) + enc.goodbye()
    assert len(stream) == sum(HEADER_LEN + len(b) for b in bodies) + HEADER_LEN
    dec = BoxDecoder(key, nonce)
    got: list[bytes] = []
    edges = sorted({0, len(stream), *(c % (len(stream) + 1) for c in cuts)})
    for a, b in itertools.pairwise(edges):
        got += dec.receive_data(stream[a:b])
    assert got == bodies and dec.closed
