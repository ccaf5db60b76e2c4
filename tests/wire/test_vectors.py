"""Conformance: the reference vectors and the worked examples of wire-compat.md, byte for byte.

The JSON vectors were produced by the reference tinySSB Python implementation (simplepub);
the worked examples are copied from ``shared/docs/wire-compat.md`` sections 2-4.
"""

from __future__ import annotations

import zlib

import pytest

from gateway.wire import bipf
from gateway.wire.entry import (
    PACKET_LEN,
    TYPE_CHAIN20,
    ZERO_HASH,
    FeedKey,
    build_entry,
    chunk_count,
    content_of,
    entry_dmx,
    entry_name,
    genesis_prev,
    msg_id_of,
    parse_chain20,
    verify_chunk,
    verify_entry,
)
from gateway.wire.goset import (
    CLAIM_LEN,
    GOSET_DMX,
    NOVELTY_LEN,
    Claim,
    Novelty,
    chnk_dmx,
    decode_goset,
    make_claim,
    want_dmx,
    xor_keys,
)
from gateway.wire.want import ChunkRequest, Want, decode_chnk, decode_want, encode_chnk, encode_want
from tests import vectors as reference_vectors

H = bytes.fromhex

# --------------------------------------------------------------------------- JSON vectors

VECTORS = reference_vectors.load()


def _entry_cases():
    cases = []
    for f_index, feed in enumerate(VECTORS["feeds"]):
        prev = None
        for entry in feed["entries"]:
            fid = H(feed["fid"])
            if prev is None:
                prev = genesis_prev(fid)
            cases.append(pytest.param(feed, entry, prev, id=f"feed{f_index}-seq{entry['seq']}"))
            prev = H(entry["msg_id"])
    return cases


def _feed_cases():
    return [pytest.param(feed, id=f"feed{i}") for i, feed in enumerate(VECTORS["feeds"])]


@pytest.mark.parametrize("feed", _feed_cases())
def test_feed_id_from_seed(feed):
    assert FeedKey.from_seed(H(feed["seed"])).fid == H(feed["fid"])


@pytest.mark.parametrize("feed, vec, prev", _entry_cases())
def test_entry_vector(feed, vec, prev):
    key = FeedKey.from_seed(H(feed["seed"]))
    fid, seq = key.fid, vec["seq"]
    content, packet = H(vec["content"]), H(vec["packet"])
    chunks = [H(c) for c in vec["chunks"]]

    name = entry_name(fid, seq, prev)
    assert name == H(vec["name"])
    assert entry_dmx(fid, seq, prev) == H(vec["dmx"])

    built = build_entry(key, seq, prev, content, vec["type"])
    assert built.packet == packet
    assert list(built.chunks) == chunks
    assert built.msg_id == H(vec["msg_id"])
    assert built.dmx == H(vec["dmx"])
    assert built.type == vec["type"]
    assert msg_id_of(name, packet) == H(vec["msg_id"])

    verified = verify_entry(fid, seq, prev, packet)
    assert verified.msg_id == H(vec["msg_id"])
    assert verified.packet == packet
    assert content_of(packet, chunks) == H(vec["read_back"])

    if vec["type"] == TYPE_CHAIN20:
        chain = parse_chain20(packet)
        assert chain.length == len(content)
        assert chain.n_chunks == len(chunks) == chunk_count(len(content))
        ptr = chain.ptr
        for chunk in chunks:
            ptr = verify_chunk(ptr, chunk)
        assert ptr == ZERO_HASH


@pytest.mark.parametrize("feed", _feed_cases())
def test_next_dmx(feed):
    fid = H(feed["fid"])
    nxt = feed["next"]
    assert H(nxt["prev"]) == H(feed["entries"][-1]["msg_id"])
    assert nxt["seq"] == feed["entries"][-1]["seq"] + 1
    assert entry_dmx(fid, nxt["seq"], H(nxt["prev"])) == H(nxt["dmx"])


def test_goset_vectors():
    g = VECTORS["goset"]
    keys = [H(k) for k in g["keys_sorted"]]
    assert keys == sorted(keys)
    state = xor_keys(keys)
    assert state == H(g["state_xor"])
    assert GOSET_DMX == H(g["goset_dmx"])

    claim_all = make_claim(keys, 0, len(keys) - 1)
    assert claim_all.encode() == H(g["claim_all"])
    assert claim_all.cnt == len(keys)
    assert decode_goset(H(g["claim_all"])) == claim_all

    claim_12 = make_claim(keys, 1, 2)
    assert claim_12.encode() == H(g["claim_1_2"])
    assert decode_goset(H(g["claim_1_2"])) == claim_12

    assert want_dmx(state) == H(g["want_dmx"])
    assert chnk_dmx(state) == H(g["chnk_dmx"])


def test_want_vector():
    g = VECTORS["goset"]
    payload = g["want_example"]["payload"]
    packet = H(g["want_example"]["packet"])
    assert encode_want(H(g["want_dmx"]), payload[0], payload[1:]) == packet
    assert decode_want(packet) == Want(payload[0], tuple(payload[1:]))


def test_chnk_vector():
    g = VECTORS["goset"]
    payload = g["chnk_example"]["payload"]
    packet = H(g["chnk_example"]["packet"])
    requests = [ChunkRequest(*t) for t in payload]
    assert encode_chnk(H(g["chnk_dmx"]), requests) == packet
    assert decode_chnk(packet) == requests


# --------------------------------------------------------------------------- wire-compat.md

SEED = bytes(range(32))
FID = H("03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8")
E1_CONTENT = H("6c18544156106869062200f15365")
E1_MSG_ID = H("b37efac40fc7f9e81220959427507ed4b85e54de")
E2_MSG_ID = H("4c8c569f5264c725f56d7bafafe9dff55c64107a")


def _entry2_content() -> bytes:
    # BIPF ["TAV", "x"*150, null, 1700000001], written out by hand
    body = (
        b"\x18TAV"  # "TAV": tag 3<<3|0
        + b"\xb0\x09"
        + b"x" * 150  # 150<<3|0 = 1200 -> varint b0 09
        + b"\x06"  # null
        + b"\x22"
        + (1700000001).to_bytes(4, "little")
    )  # 4-byte int
    assert len(body) == 162
    return b"\x94\x0a" + body  # list tag 162<<3|4 = 1300 -> varint 94 0a


@pytest.fixture(scope="module")
def key():
    return FeedKey.from_seed(SEED)


def test_example_fid(key):
    assert key.fid == FID


def test_example_entry1(key):
    prev = genesis_prev(FID)
    assert prev == H("03a107bff3ce10be1d70dd18e74bc09967e4d630")
    assert entry_name(FID, 1, prev) == (H("74696e797373622d7630") + FID + H("00000001") + prev)
    assert bipf.encode(["TAV", "hi", None, 1700000000]) == E1_CONTENT

    e = build_entry(key, 1, prev, E1_CONTENT)
    p = e.packet
    assert len(p) == PACKET_LEN
    assert p[:7] == H("54a47378b8ca59") == entry_dmx(FID, 1, prev)
    assert p[7] == 1
    assert p[8:36] == b"\x0e" + E1_CONTENT + bytes(13)
    assert p[36:56] == ZERO_HASH
    assert p[56:].hex().startswith("115dcb63ac6d15fb")
    assert p[56:].hex().endswith("9aff94803")
    assert e.chunks == ()
    assert e.msg_id == E1_MSG_ID
    assert zlib.crc32(p).to_bytes(4, "big") == H("e1063266")  # section 5 CRC example
    assert verify_entry(FID, 1, prev, p).msg_id == E1_MSG_ID
    assert content_of(p) == E1_CONTENT


def test_example_entry2(key):
    content = _entry2_content()
    assert bipf.encode(["TAV", "x" * 150, None, 1700000001]) == content
    assert len(content) == 164

    e = build_entry(key, 2, E1_MSG_ID, content)
    p = e.packet
    assert p[:7] == H("69329c6f089d2a") == entry_dmx(FID, 2, E1_MSG_ID)
    assert p[7] == 1
    assert p[8:10] == H("a401")  # VL = 164
    assert p[10:36] == H("940a18544156b009") + b"x" * 18  # HEAD, 26 bytes
    assert p[36:56] == H("d3069cbf8e6198910c7533603b50e5b97a722f73")

    assert chunk_count(164) == 2
    assert len(e.chunks) == 2
    c0, c1 = e.chunks
    assert c0 == b"x" * 100 + H("e1b9cfc55bc9df887d1df5313e7272e1c36b245d")
    assert c1 == b"x" * 32 + H("062201f15365") + bytes(62) + bytes(20)
    assert verify_chunk(p[36:56], c0) == H("e1b9cfc55bc9df887d1df5313e7272e1c36b245d")
    assert verify_chunk(H("e1b9cfc55bc9df887d1df5313e7272e1c36b245d"), c1) == ZERO_HASH

    assert e.msg_id == E2_MSG_ID
    assert verify_entry(FID, 2, E1_MSG_ID, p).msg_id == E2_MSG_ID
    assert content_of(p, e.chunks) == content
    assert entry_dmx(FID, 3, E2_MSG_ID) == H("63c3b516659b42")


def test_example_goset_constants():
    assert GOSET_DMX == H("613dfa70c47aba")
    assert xor_keys([]) == bytes(32)
    assert want_dmx(bytes(32)) == H("c6f6c4540d6273")
    assert chnk_dmx(bytes(32)) == H("9e93a5535d8b1a")
    assert CLAIM_LEN == 105 and NOVELTY_LEN == 40


def test_example_claim():
    keys = [b"\x11" * 32, b"\x22" * 32, b"\x44" * 32]
    claim = make_claim(keys, 0, 2)
    expected = H("613dfa70c47aba") + b"c" + b"\x11" * 32 + b"\x44" * 32 + b"\x77" * 32 + b"\x03"
    assert claim.encode() == expected
    assert decode_goset(expected) == Claim(b"\x11" * 32, b"\x44" * 32, b"\x77" * 32, 3)
    state = xor_keys(keys)
    assert state == b"\x77" * 32
    assert want_dmx(state) == H("1163c3d3ca0197")
    assert chnk_dmx(state) == H("c5ca9ee8c498d3")


def test_example_novelty():
    pkt = Novelty(FID).encode()
    assert pkt == H("613dfa70c47aba6e") + FID
    assert len(pkt) == 40
    assert decode_goset(pkt) == Novelty(FID)


def test_example_want():
    pkt = H("d7dec91eb68b9c240a000a03")
    # a 1-key set's state is that key: the example FID
    assert want_dmx(xor_keys([FID])) == pkt[:7]
    want = decode_want(pkt)
    assert want.offset == 0
    assert want.seqs == (3,)
    assert want.slots(1) == [(0, 3)]
    assert encode_want(pkt[:7], 0, [3]) == pkt


def test_example_chnk():
    pkt = H("9a7b5ec267e7d03c340a000a020a01")
    assert chnk_dmx(xor_keys([FID])) == pkt[:7]
    assert decode_chnk(pkt) == [ChunkRequest(0, 2, 1)]
    assert encode_chnk(pkt[:7], [ChunkRequest(0, 2, 1)]) == pkt


def test_esp32_unsigned_ints_in_want():
    dmx = H("d7dec91eb68b9c")
    # ESP32/Android write 200 as 0ac8 (unsigned minimal); PY would read it as -56
    assert decode_want(dmx + H("240a000ac8")).seqs == (200,)
    # 128 -> 0a80, 40000 -> 12409c, 2^24-1 -> 1affffff, offset 255 -> 0aff
    body = H("0aff0a8012409c1affffff")
    pkt = dmx + bytes([(len(body) << 3) | 4]) + body
    want = decode_want(pkt)
    assert want.offset == 255
    assert want.seqs == (128, 40000, 2**24 - 1)


def test_esp32_unsigned_ints_in_chnk():
    dmx = H("9a7b5ec267e7d0")
    triple = H("0ac812ff800a80")  # [200, 33023, 128]
    inner = bytes([(len(triple) << 3) | 4]) + triple
    pkt = dmx + bytes([(len(inner) << 3) | 4]) + inner
    assert decode_chnk(pkt) == [ChunkRequest(200, 0x80FF, 128)]


def test_padded_want_and_chnk_are_tolerated():
    # wire-compat.md 8.4: padding WANT/CHNK to 120 B is tolerated
    want = H("d7dec91eb68b9c240a000a03")
    chnk = H("9a7b5ec267e7d03c340a000a020a01")
    assert decode_want(want.ljust(120, b"\x00")) == Want(0, (3,))
    assert decode_chnk(chnk.ljust(120, b"\x00")) == [ChunkRequest(0, 2, 1)]
