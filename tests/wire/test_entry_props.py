"""Properties of the entry / side-chain, GOSET and WANT/CHNK codecs."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.wire import bipf
from gateway.wire.entry import (
    PACKET_LEN,
    TYPE_CHAIN20,
    TYPE_PLAIN48,
    ZERO_HASH,
    FeedKey,
    build_entry,
    chunk_count,
    content_of,
    entry_dmx,
    genesis_prev,
    hash20,
    parse_chain20,
    verify_chunk,
    verify_entry,
)
from gateway.wire.errors import PacketError, SignatureError, WireError
from gateway.wire.goset import (
    CLAIM_LEN,
    GOSET_DMX,
    NOVELTY_LEN,
    ZAP_LEN,
    Claim,
    Novelty,
    Zap,
    decode_goset,
    make_claim,
    xor_keys,
)
from gateway.wire.ident import parse_id
from gateway.wire.want import (
    MAX_PROTOCOL_INT,
    ChunkRequest,
    Want,
    decode_chnk,
    decode_want,
    encode_chnk,
    encode_want,
)

CRYPTO = settings(max_examples=200, deadline=None,
                  suppress_health_check=[HealthCheck.too_slow])
FAST = settings(max_examples=200, deadline=None)

KEY = FeedKey.from_seed(hashlib.sha256(b"entry props").digest())
PREV = genesis_prev(KEY.fid)

u24 = st.integers(min_value=0, max_value=MAX_PROTOCOL_INT)
key32 = st.binary(min_size=32, max_size=32)
hash20s = st.binary(min_size=20, max_size=20)


def _content(length: int) -> bytes:
    """Deterministic, non-repeating-looking content of ``length`` bytes."""
    out = b""
    i = 0
    while len(out) < length:
        out += hashlib.sha256(length.to_bytes(4, "big") + i.to_bytes(4, "big")).digest()
        i += 1
    return out[:length]


def _vl_len(length: int) -> int:
    return 1 if length < 128 else 2 if length < 16384 else 3


def _expected_chunks(length: int) -> int:
    rest = length - (28 - _vl_len(length))
    return max(0, -(-rest // 100))


def _check_entry(entry, content: bytes, seq: int, prev: bytes, key: FeedKey = KEY) -> None:
    packet, chunks = entry.packet, list(entry.chunks)
    assert len(packet) == PACKET_LEN
    assert all(len(c) == PACKET_LEN for c in chunks)
    assert packet[7] == TYPE_CHAIN20
    assert packet[:7] == entry_dmx(key.fid, seq, prev)
    n = len(chunks)
    assert n == chunk_count(len(content)) == _expected_chunks(len(content))

    chain = parse_chain20(packet)
    assert chain.length == len(content)
    assert chain.n_chunks == n
    vl = _vl_len(len(content))
    room = 28 - vl
    assert chain.head == content[:room]
    # head is zero padded up to the PTR slot
    assert packet[8 + vl + len(chain.head):36] == bytes(room - len(chain.head))

    # the hash chain links: PTR -> chunk 0 -> ... -> last chunk -> zeros
    ptr = chain.ptr
    if n == 0:
        assert ptr == ZERO_HASH
    for chunk in chunks:
        assert ptr != ZERO_HASH
        ptr = verify_chunk(ptr, chunk)
    assert ptr == ZERO_HASH
    if n:
        tail = len(content) - room - 100 * (n - 1)
        assert 1 <= tail <= 100
        assert chunks[-1][tail:100] == bytes(100 - tail)

    verified = verify_entry(key.fid, seq, prev, packet)
    assert verified.msg_id == entry.msg_id
    assert content_of(packet, chunks) == content


# --------------------------------------------------------------------------- round trips


def test_round_trip_every_length_0_to_2000():
    prev = PREV
    for length in range(2001):
        content = _content(length)
        entry = build_entry(KEY, length + 1, prev, content)
        _check_entry(entry, content, length + 1, prev)
        prev = entry.msg_id


@pytest.mark.parametrize("length", [0, 1, 26, 27, 28, 126, 127, 128, 129, 226, 227,
                                    16383, 16384, 20000])
def test_round_trip_boundaries(length):
    content = _content(length)
    entry = build_entry(KEY, 7, PREV, content)
    _check_entry(entry, content, 7, PREV)


@CRYPTO
@given(seed=key32, seq=st.integers(1, 2**32 - 1), prev=hash20s,
       content=st.binary(max_size=3000))
def test_round_trip_random(seed, seq, prev, content):
    key = FeedKey.from_seed(seed)
    entry = build_entry(key, seq, prev, content)
    _check_entry(entry, content, seq, prev, key)


def test_chunk_count_formula():
    for length in range(0, 70000, 7):
        assert chunk_count(length) == _expected_chunks(length)


@CRYPTO
@given(content=st.binary(max_size=48), seq=st.integers(1, 1000))
def test_plain48_round_trip(content, seq):
    entry = build_entry(KEY, seq, PREV, content, TYPE_PLAIN48)
    assert entry.chunks == ()
    assert entry.type == TYPE_PLAIN48
    packet = entry.packet
    assert len(packet) == PACKET_LEN
    assert packet[8:56] == content.ljust(48, b"\x00")
    assert verify_entry(KEY.fid, seq, PREV, packet).msg_id == entry.msg_id
    assert content_of(packet) == content.ljust(48, b"\x00")


def test_plain48_rejects_long_content():
    with pytest.raises(PacketError):
        build_entry(KEY, 1, PREV, bytes(49), TYPE_PLAIN48)


def test_build_rejects_unknown_type():
    with pytest.raises(PacketError):
        build_entry(KEY, 1, PREV, b"x", 2)


def test_verify_rejects_wrong_context():
    entry = build_entry(KEY, 5, PREV, b"hello")
    other = FeedKey.from_seed(bytes(32))
    for fid, seq, prev in [(other.fid, 5, PREV), (KEY.fid, 6, PREV),
                           (KEY.fid, 5, bytes(20))]:
        with pytest.raises(PacketError):
            verify_entry(fid, seq, prev, entry.packet)
    for bad in (entry.packet[:119], entry.packet + b"\x00", b""):
        with pytest.raises(PacketError):
            verify_entry(KEY.fid, 5, PREV, bad)


def test_verify_rejects_same_dmx_foreign_signature():
    # a packet with the right DMX but signed by another key
    other = FeedKey.from_seed(bytes(32))
    forged = build_entry(other, 5, PREV, b"hello")
    real_dmx = entry_dmx(KEY.fid, 5, PREV)
    packet = real_dmx + forged.packet[7:]
    with pytest.raises(SignatureError):
        verify_entry(KEY.fid, 5, PREV, packet)


# --------------------------------------------------------------------------- bit flips

FLIP_ENTRY = build_entry(KEY, 3, PREV, _content(300))


def _flip(data: bytes, bit: int) -> bytes:
    buf = bytearray(data)
    buf[bit // 8] ^= 1 << (bit % 8)
    return bytes(buf)


def test_every_bit_flip_in_an_entry_is_rejected():
    packet = FLIP_ENTRY.packet
    verify_entry(KEY.fid, 3, PREV, packet)  # the original is fine
    for bit in range(PACKET_LEN * 8):
        bad = _flip(packet, bit)
        with pytest.raises(PacketError) as info:
            verify_entry(KEY.fid, 3, PREV, bad)
        if bit < 7 * 8:
            assert type(info.value) is PacketError  # DMX mismatch
        else:
            assert isinstance(info.value, SignatureError), bit


def test_every_bit_flip_in_a_chunk_is_rejected():
    assert len(FLIP_ENTRY.chunks) == 3
    for index, chunk in enumerate(FLIP_ENTRY.chunks):
        expected = hash20(chunk)
        verify_chunk(expected, chunk)
        bits = range(PACKET_LEN * 8) if index == 0 else range(0, PACKET_LEN * 8, 37)
        for bit in bits:
            with pytest.raises(PacketError):
                verify_chunk(expected, _flip(chunk, bit))


@CRYPTO
@given(content=st.binary(max_size=600), bit=st.integers(0, PACKET_LEN * 8 - 1),
       data=st.data())
def test_random_bit_flips_rejected(content, bit, data):
    entry = build_entry(KEY, 9, PREV, content)
    with pytest.raises(PacketError):
        verify_entry(KEY.fid, 9, PREV, _flip(entry.packet, bit))
    if entry.chunks:
        i = data.draw(st.integers(0, len(entry.chunks) - 1))
        chunk = entry.chunks[i]
        with pytest.raises(PacketError):
            verify_chunk(hash20(chunk), _flip(chunk, bit))


def test_verify_chunk_rejects_wrong_length():
    chunk = FLIP_ENTRY.chunks[0]
    for bad in (chunk[:119], chunk + b"\x00", b""):
        with pytest.raises(PacketError):
            verify_chunk(hash20(bad), bad)


# --------------------------------------------------------------------------- garbage in

ANY = settings(max_examples=300, deadline=None)


def _wire_only(fn, *args):
    try:
        return fn(*args)
    except WireError:
        return None


@ANY
@given(packet=st.one_of(st.binary(max_size=130), st.binary(min_size=120, max_size=120)),
       seq=st.integers(1, 2**32 - 1), prev=hash20s, fid=key32)
def test_verify_entry_garbage(packet, seq, prev, fid):
    assert _wire_only(verify_entry, fid, seq, prev, packet) is None


@ANY
@given(packet=st.binary(max_size=130))
def test_parse_chain20_garbage(packet):
    chain = _wire_only(parse_chain20, packet)
    if chain is not None:
        assert len(chain.ptr) == 20
        assert len(chain.head) <= 27


@ANY
@given(packet=st.one_of(st.binary(max_size=130),
                        st.binary(min_size=120, max_size=120),
                        st.binary(min_size=112, max_size=112).map(
                            lambda b: b[:7] + b"\x01" + b[7:])),
       chunks=st.lists(st.binary(min_size=120, max_size=120), max_size=3))
def test_content_of_garbage(packet, chunks):
    out = _wire_only(content_of, packet, chunks)
    if out is not None:
        assert isinstance(out, bytes)
        if packet[7] != TYPE_CHAIN20:
            assert out == packet[8:56]


@ANY
@given(body=st.binary(max_size=110))
def test_decode_goset_garbage(body):
    for packet in (GOSET_DMX + body, body):
        out = _wire_only(decode_goset, packet)
        assert out is None or isinstance(out, (Claim, Novelty, Zap))


@ANY
@given(packet=st.binary(max_size=130))
def test_decode_want_chnk_garbage(packet):
    out = _wire_only(decode_want, packet)
    assert out is None or isinstance(out, Want)
    out = _wire_only(decode_chnk, packet)
    assert out is None or all(isinstance(r, ChunkRequest) for r in out)


_atoms = st.one_of(st.none(), st.booleans(), st.integers(-2**40, 2**40),
                   st.floats(allow_nan=False), st.text(max_size=5), st.binary(max_size=5))
_values = st.recursive(_atoms, lambda inner: st.lists(inner, max_size=5), max_leaves=20)


@FAST
@given(value=_values, pad=st.binary(max_size=8))
def test_decode_want_chnk_structured_garbage(value, pad):
    # well-formed BIPF of the wrong shape: decoders skip or reject, never crash
    packet = b"\x01" * 7 + bipf.encode(value) + pad
    want = _wire_only(decode_want, packet)
    if want is not None:
        assert want.offset >= 0
        assert all(s is None or (isinstance(s, int) and s >= 0) for s in want.seqs)
    reqs = _wire_only(decode_chnk, packet)
    if reqs is not None:
        assert all(min(r.fndx, r.seq, r.cnr) >= 0 and r.seq > 0 for r in reqs)


@ANY
@given(text=st.text(max_size=80))
def test_parse_id_garbage(text):
    out = _wire_only(parse_id, text)
    assert out is None or len(out) == 32


# --------------------------------------------------------------------------- GOSET


@FAST
@given(lo=key32, hi=key32, xor=key32, cnt=st.integers(0, 255))
def test_claim_round_trip(lo, hi, xor, cnt):
    claim = Claim(lo, hi, xor, cnt)
    packet = claim.encode()
    assert len(packet) == CLAIM_LEN
    assert packet[:8] == GOSET_DMX + b"c"
    assert decode_goset(packet) == claim


@FAST
@given(key=key32)
def test_novelty_round_trip(key):
    packet = Novelty(key).encode()
    assert len(packet) == NOVELTY_LEN
    assert packet[:8] == GOSET_DMX + b"n"
    assert decode_goset(packet) == Novelty(key)


@FAST
@given(lo=key32, hi=key32, xor=key32, cnt=st.integers(0, 255), key=key32,
       pad=st.binary(min_size=1, max_size=20), cut=st.integers(1, 30))
def test_goset_exact_lengths(lo, hi, xor, cnt, key, pad, cut):
    claim = Claim(lo, hi, xor, cnt).encode()
    novelty = Novelty(key).encode()
    for good in (claim, novelty):
        for bad in (good + pad, good[:-cut]):
            with pytest.raises(PacketError):
                decode_goset(bad)


def test_goset_padded_with_zeros_rejected():
    claim = Claim(b"\x11" * 32, b"\x44" * 32, b"\x77" * 32, 3).encode()
    novelty = Novelty(b"\x22" * 32).encode()
    with pytest.raises(PacketError):
        decode_goset(claim.ljust(120, b"\x00"))
    with pytest.raises(PacketError):
        decode_goset(novelty.ljust(120, b"\x00"))
    with pytest.raises(PacketError):
        decode_goset(GOSET_DMX)
    with pytest.raises(PacketError):
        decode_goset(GOSET_DMX + b"x" + bytes(32))
    with pytest.raises(PacketError):
        decode_goset(b"\x00" * 7 + claim[7:])


def test_zap_decoded():
    nonce = bytes(range(32))
    for index in (-1, 0, 5, 2**31 - 1):
        packet = GOSET_DMX + b"z" + nonce + bytes(3) + index.to_bytes(4, "big", signed=True)
        assert len(packet) == ZAP_LEN
        assert decode_goset(packet) == Zap(nonce, index)
        with pytest.raises(PacketError):
            decode_goset(packet + b"\x00")


@FAST
@given(keys=st.sets(key32, min_size=1, max_size=100), data=st.data())
def test_make_claim(keys, data):
    ks = sorted(keys)
    lo = data.draw(st.integers(0, len(ks) - 1))
    hi = data.draw(st.integers(lo, len(ks) - 1))
    claim = make_claim(ks, lo, hi)
    assert claim.lo == ks[lo] and claim.hi == ks[hi]
    assert claim.cnt == hi - lo + 1
    acc = bytes(32)
    for k in ks[lo:hi + 1]:
        acc = bytes(a ^ b for a, b in zip(acc, k))
    assert claim.xor == acc == xor_keys(ks[lo:hi + 1])
    assert decode_goset(claim.encode()) == claim
    # the xor is order independent and a key xored twice cancels
    assert xor_keys(list(reversed(ks))) == xor_keys(ks)
    assert xor_keys(ks + [ks[0]]) == xor_keys(ks[1:])
    for bad_lo, bad_hi in ((hi, lo - 1), (-1, hi), (lo, len(ks))):
        with pytest.raises(PacketError):
            make_claim(ks, bad_lo, bad_hi)


# --------------------------------------------------------------------------- WANT / CHNK

DMX7 = st.binary(min_size=7, max_size=7)


@FAST
@given(dmx=DMX7, offset=u24, seqs=st.lists(u24, max_size=40))
def test_want_round_trip_or_too_long(dmx, offset, seqs):
    size = 7 + len(bipf.encode([offset, *seqs]))
    if size <= PACKET_LEN:
        packet = encode_want(dmx, offset, seqs)
        assert len(packet) == size
        assert packet[:7] == dmx
        assert decode_want(packet) == Want(offset, tuple(seqs))
        assert decode_want(packet.ljust(PACKET_LEN, b"\x00")) == Want(offset, tuple(seqs))
    else:
        with pytest.raises(PacketError):
            encode_want(dmx, offset, seqs)


@FAST
@given(dmx=DMX7, reqs=st.lists(st.tuples(u24, st.integers(1, MAX_PROTOCOL_INT), u24),
                               max_size=12))
def test_chnk_round_trip_or_too_long(dmx, reqs):
    requests = [ChunkRequest(*t) for t in reqs]
    size = 7 + len(bipf.encode([list(t) for t in reqs]))
    if size <= PACKET_LEN:
        packet = encode_chnk(dmx, requests)
        assert len(packet) == size
        assert decode_chnk(packet) == requests
        assert decode_chnk(packet.ljust(PACKET_LEN, b"\x00")) == requests
    else:
        with pytest.raises(PacketError):
            encode_chnk(dmx, requests)


def test_want_too_long_rejected():
    # 7 + tag(2) + 1 offset(2) + 37 * 3-byte ints(4) > 120
    with pytest.raises(PacketError):
        encode_want(b"\x00" * 7, 0, [2**23] * 37)
    with pytest.raises(PacketError):
        encode_chnk(b"\x00" * 7, [ChunkRequest(2**23, 2**23, 2**23)] * 8)


@FAST
@given(bad=st.one_of(st.integers(max_value=-1), st.integers(min_value=MAX_PROTOCOL_INT + 1)),
       pos=st.integers(0, 3))
def test_encode_rejects_out_of_range_ints(bad, pos):
    seqs = [1, 2, 3]
    if pos == 0:
        with pytest.raises(PacketError):
            encode_want(b"\x00" * 7, bad, seqs)
    else:
        seqs[pos - 1] = bad
        with pytest.raises(PacketError):
            encode_want(b"\x00" * 7, 0, seqs)
    triple = [1, 1, 1]
    triple[pos % 3] = bad
    with pytest.raises(PacketError):
        encode_chnk(b"\x00" * 7, [ChunkRequest(*triple)])


def test_encode_rejects_bad_dmx():
    with pytest.raises(PacketError):
        encode_want(b"\x00" * 6, 0, [1])
    with pytest.raises(PacketError):
        encode_chnk(b"\x00" * 8, [])


def _unsigned_minimal(value: int) -> bytes:
    """How ESP32/Android encode a non-negative BIPF int: minimal unsigned byte count."""
    n = max(1, (value.bit_length() + 7) // 8)
    return bytes([(n << 3) | 2]) + value.to_bytes(n, "little")


def _list(items: list[bytes]) -> bytes:
    body = b"".join(items)
    return bipf.encode_tag(len(body), 4) + body


@FAST
@given(offset=u24, seqs=st.lists(u24, max_size=15),
       reqs=st.lists(st.tuples(u24, st.integers(1, MAX_PROTOCOL_INT), u24), max_size=5))
def test_decode_unsigned_esp32_ints(offset, seqs, reqs):
    want = b"\x00" * 7 + _list([_unsigned_minimal(v) for v in [offset, *seqs]])
    assert decode_want(want) == Want(offset, tuple(seqs))
    chnk = b"\x00" * 7 + _list([_list([_unsigned_minimal(v) for v in t]) for t in reqs])
    assert decode_chnk(chnk) == [ChunkRequest(*t) for t in reqs]


def test_decode_skips_unusable_slots():
    dmx = b"\x00" * 7
    want = decode_want(dmx + bipf.encode([2, 5, "x", None, True, 0, 7]))
    assert want.offset == 2
    assert want.seqs == (5, None, None, None, 0, 7)
    assert want.slots(3) == [(2, 5), (1, 7)]
    assert want.slots(0) == []
    reqs = decode_chnk(dmx + bipf.encode([[0, 1, 2], [1, 0, 0], "x", [1, 2], [3, True, 1],
                                          [4, 5, 6, 7]]))
    assert reqs == [ChunkRequest(0, 1, 2), ChunkRequest(4, 5, 6)]
    for bad in (dmx, dmx + bipf.encode([]), dmx + bipf.encode({1: 2}), dmx + b"\x07",
                dmx + bipf.encode(["x", 1])):
        with pytest.raises(PacketError):
            decode_want(bad)


# --------------------------------------------------------------------------- known bugs


def test_chain20_nonminimal_length_varint_matches_reference():
    """A chain20 length written as a non-minimal varint (27 as ``9b 00``).

    The reference (simplepub replica.py) derives the chunk count from the *actual* VL size:
    ``(L - (28 - sz) + 99) // 100`` = 1 chunk here, and its HEAD is 26 bytes. Either that, or
    rejecting the packet, is acceptable; returning 26 bytes for a 27-byte content is not.
    """
    head = bytes(range(1, 27))  # 26 bytes
    packet = bytes(7) + b"\x01" + b"\x9b\x00" + head + bytes(20) + bytes(64)
    assert len(packet) == PACKET_LEN
    try:
        chain = parse_chain20(packet)
    except PacketError:
        return
    assert chain.length == 27
    assert chain.n_chunks == (27 - 26 + 99) // 100 == 1
    try:
        out = content_of(packet, [])
    except PacketError:
        return
    assert len(out) == 27, f"content_of returned {len(out)} bytes for L=27"
