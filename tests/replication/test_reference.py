"""A Node answers reference frames exactly as the reference implementations would.

Frames come from ``shared/vectors`` (via ``tests.vectors``) and from the worked examples
of ``shared/docs/wire-compat.md`` sections 2-5; the expected answers are the stored
packets byte for byte, in the order and number the references send them (credit 3 for
the ``reference`` preset, 5 for ``default``; round-robin over the slots asked for,
consecutive sequence or chunk numbers per slot). Everything runs in virtual time: a test
calls ``frames_to_send(now)`` at the times the Node itself reports as deadlines.
"""

from __future__ import annotations

import functools
import random

import pytest

from gateway.replication import DEFAULT, REFERENCE, Drop, Face, FrameKind, Node, Outgoing
from gateway.store.memory import MemoryStore
from gateway.wire import bipf
from gateway.wire.crc import add_crc
from gateway.wire.entry import Entry, FeedKey, build_feed
from gateway.wire.goset import chnk_dmx, want_dmx
from tests import vectors
from tests.replication.mesh import Mesh

H = bytes.fromhex
V = vectors.load()

GOSET = H(V["goset"]["goset_dmx"])  # 613dfa70c47aba
KEYS = [H(k) for k in V["goset"]["keys_sorted"]]
CLAIM_ALL = H(V["goset"]["claim_all"])
CLAIM_1_2 = H(V["goset"]["claim_1_2"])
VEC_WANT_DMX = H(V["goset"]["want_dmx"])
VEC_WANT = H(V["goset"]["want_example"]["packet"])
VEC_CHNK = H(V["goset"]["chnk_example"]["packet"])

FEED0, FEED1 = V["feeds"]  # feed 0: 8 entries with side chains; feed 1: 2 small entries
F0, F1 = H(FEED0["fid"]), H(FEED1["fid"])
assert F1 < F0  # so in the GOSET {F0, F1}, F1 has index 0 and F0 index 1

PRESETS = [pytest.param(REFERENCE, id="reference"), pytest.param(DEFAULT, id="default")]


def pkt(feed: dict, seq: int) -> bytes:
    """Entry ``seq`` of a vector feed, as the reference built it."""
    return H(feed["entries"][seq - 1]["packet"])


def chunk(feed: dict, seq: int, cnr: int) -> bytes:
    return H(feed["entries"][seq - 1]["chunks"][cnr])


def xor(*keys: bytes) -> bytes:
    acc = 0
    for k in keys:
        acc ^= int.from_bytes(k, "big")
    return acc.to_bytes(32, "big")


def claim(lo: bytes, hi: bytes, x: bytes, cnt: int) -> bytes:
    """A claim laid out as wire-compat.md section 3 says (105 B)."""
    return GOSET + b"c" + lo + hi + x + bytes([cnt])


def claim_over(keys: list[bytes]) -> bytes:
    """The claim over a run of consecutive keys of a sorted set."""
    return claim(keys[0], keys[-1], xor(*keys), len(keys))


def novelty(key: bytes) -> bytes:
    return GOSET + b"n" + key


# --- the worked example feed of wire-compat.md section 2 -------------------------------

W_KEY = FeedKey.from_seed(bytes(range(32)))
W_DMX_WANT = H("d7dec91eb68b9c")  # WANT DMX of the 1-key set {W}, wire-compat sec 4
W_DMX_CHNK = H("9a7b5ec267e7d0")


def _worked_feed(n: int) -> list[Entry]:
    contents = [H("6c18544156106869062200f15365"),  # ["TAV","hi",null,1700000000]
                bipf.encode(["TAV", "x" * 150, None, 1700000001])]
    contents += [f"entry {seq}".encode() for seq in range(3, n + 1)]
    return build_feed(W_KEY, contents)


W = _worked_feed(205)
W2_CHUNK1 = b"x" * 32 + H("062201f15365") + bytes(62) + bytes(20)  # wire-compat sec 2


# --- stores and nodes --------------------------------------------------------------------

def vector_store(extra_keys: list[bytes] = ()) -> MemoryStore:
    """Both vector feeds, published from their seeds, plus empty replicas of extra keys."""
    store = MemoryStore()
    for feed in V["feeds"]:
        key = FeedKey.from_seed(H(feed["seed"]))
        for e in feed["entries"]:
            store.publish(key, H(e["content"]), e["type"])
    for k in extra_keys:
        store.add_feed(k)
    return store


def keys_store(keys: list[bytes]) -> MemoryStore:
    store = MemoryStore()
    for k in keys:
        store.add_feed(k)
    return store


def worked_store(n: int, chunks_of_2: int | None = None) -> MemoryStore:
    """The worked-example feed up to entry ``n``; entry 2 with only ``chunks_of_2`` of its
    two chunks when given (the store then waits for the rest)."""
    store = MemoryStore()
    if chunks_of_2 is None:
        replica = store.add_feed(W_KEY.fid)
        for entry in W[:n]:
            replica.append_own(entry)
        return store
    store.add_feed(W_KEY.fid)
    for entry in W[:n]:
        store.ingest_entry(W_KEY.fid, entry.packet)
    for c in W[1].chunks[:chunks_of_2]:
        store.ingest_chunk(c)
    return store


def make_node(store: MemoryStore, policy=REFERENCE, faces: tuple[Face, ...] = ()) -> Node:
    node = Node(store, policy=policy, rng=random.Random(7), name="dut")
    for face in faces or (Face("a"),):
        node.add_face(face, 0.0)
    return node


def run(node: Node, start: float, end: float) -> list[Outgoing]:
    """Everything ``node`` sends from ``start`` up to ``end``, deadline by deadline."""
    out: list[Outgoing] = []
    t = start
    for _ in range(10_000):
        out += node.frames_to_send(t)
        nxt = node.next_deadline()
        if nxt is None or nxt > end:
            return out
        t = max(t, nxt)
    raise AssertionError("node never went idle")


def ask(node: Node, frame: bytes, face: str = "a", now: float = 0.0) -> list[bytes]:
    """Send ``frame`` to an otherwise quiet node; the frames it answers with at once."""
    run(node, now, now)  # what was due already
    node.receive(now, face, frame)
    return [o.frame for o in node.frames_to_send(now)]


def goset_frames(out: list[Outgoing], face: str | None = None) -> list[bytes]:
    return [o.frame for o in out if o.frame[:7] == GOSET and (face is None or o.face == face)]


# --- the reference feeds in a store -------------------------------------------------------

def test_store_published_from_vector_seeds_holds_the_reference_bytes():
    store = vector_store()
    for feed in V["feeds"]:
        fid = H(feed["fid"])
        assert store.replica(fid).max_seq == len(feed["entries"])
        for e in feed["entries"]:
            assert store.read_packet(fid, e["seq"]) == H(e["packet"])
            assert [store.read_chunk(fid, e["seq"], i) for i in range(len(e["chunks"]))] == [
                H(c) for c in e["chunks"]]
            assert store.read_content(fid, e["seq"]) == H(e["read_back"])


def test_local_claim_builder_matches_the_vectors():
    # the helper used below to write expected claims is itself checked against reference
    assert claim_over(KEYS) == CLAIM_ALL
    assert claim_over(KEYS[1:3]) == CLAIM_1_2


# --- WANT ------------------------------------------------------------------------------

TWO = want_dmx(xor(F0, F1))  # WANT DMX of the set {F1 (index 0), F0 (index 1)}


@pytest.mark.parametrize("body, reference, default", [
    # [offs 0: F1 from 1, F0 from 1]
    ("340a000a010a01",
     [(FEED1, 1), (FEED0, 1), (FEED1, 2)],
     [(FEED1, 1), (FEED0, 1), (FEED1, 2), (FEED0, 2), (FEED0, 3)]),
    # the vector WANT payload [1, 5, 1, 17]: F0 from 5, F1 from 1, F0 from 17 (none)
    (V["goset"]["want_example"]["packet"][14:],
     [(FEED0, 5), (FEED1, 1), (FEED0, 6)],
     [(FEED0, 5), (FEED1, 1), (FEED0, 6), (FEED1, 2), (FEED0, 7)]),
    # fewer packets held than credit: everything after F1.1 and F0.6
    ("340a000a020a07",
     [(FEED1, 2), (FEED0, 7), (FEED0, 8)],
     [(FEED1, 2), (FEED0, 7), (FEED0, 8)]),
    # the peer has everything we have
    ("340a000a030a09", [], []),
])
@pytest.mark.parametrize("policy", PRESETS)
def test_want_is_answered_round_robin_with_the_preset_credit(policy, body, reference, default):
    node = make_node(vector_store(), policy)
    expected = reference if policy is REFERENCE else default
    assert ask(node, TWO + H(body)) == [pkt(f, s) for f, s in expected]


@pytest.mark.parametrize("policy, n", [pytest.param(REFERENCE, 3, id="reference"),
                                       pytest.param(DEFAULT, 5, id="default")])
@pytest.mark.parametrize("body", [
    "240a000ac8",  # ESP32/Android: 200 as unsigned-minimal int
    "2c0a0012c800",  # Python reference: 200 as signed-minimal int
])
def test_want_with_unsigned_or_signed_ints_from_other_implementations(policy, n, body):
    node = make_node(worked_store(205), policy)
    assert ask(node, W_DMX_WANT + H(body)) == [e.packet for e in W[199:199 + n]]


@pytest.mark.parametrize("offset", ["0a80", "128000"])  # 128, unsigned and signed
def test_want_offset_beyond_127_maps_onto_the_set(offset):
    # {F1, F0, k3(9409..)}: index 128 % 3 = 2 is F0; read as signed, 0x80 would be -128 -> 1
    store = vector_store([KEYS[3]])
    dmx = want_dmx(xor(F0, F1, KEYS[3]))
    body = H(offset) + H("0a06")
    frame = dmx + bipf.encode_tag(len(body), 4) + body
    assert ask(make_node(store), frame) == [pkt(FEED0, 6), pkt(FEED0, 7), pkt(FEED0, 8)]


def test_want_of_the_worked_example_is_answered():
    node = make_node(worked_store(2))
    # wire-compat sec 4 layout, "send feed 0 from seq 1"
    assert ask(node, W_DMX_WANT + H("240a000a01")) == [W[0].packet, W[1].packet]
    assert ask(node, W_DMX_WANT + H("240a000a03")) == []


def test_want_under_an_old_goset_state_is_not_answered():
    node = make_node(vector_store())
    assert ask(node, TWO + H("340a000a020a01")) == [pkt(FEED1, 2), pkt(FEED0, 1),
                                                     pkt(FEED0, 2)]
    node.receive(0.0, "a", novelty(KEYS[0]))  # the set (and with it the WANT DMX) changes
    assert ask(node, TWO + H("340a000a020a01")) == []
    three = want_dmx(xor(F0, F1, KEYS[0]))  # {k0, F1, F0}: F1 is index 1 now
    assert ask(node, three + H("340a010a010a01")) == [pkt(FEED1, 1), pkt(FEED0, 1),
                                                       pkt(FEED1, 2)]


# --- CHNK ------------------------------------------------------------------------------

TWO_CHNK = chnk_dmx(xor(F0, F1))


@pytest.mark.parametrize("body, reference, default", [
    # [[1,2,1],[1,8,0]]: F0 entry 2 from chunk 1, F0 entry 8 from chunk 0
    ("74340a010a020a01340a010a080a00",
     [(2, 1), (8, 0), (2, 2)],
     [(2, 1), (8, 0), (2, 2), (8, 1), (2, 3)]),
    # [[1,7,0],[1,6,0],[1,2,4]]: three one-chunk answers
    ("ac01340a010a070a00340a010a060a00340a010a020a04",
     [(7, 0), (6, 0), (2, 4)],
     [(7, 0), (6, 0), (2, 4)]),
    # the vector CHNK payload [[0,3,0],[2,1,4]]: F1 has no entry 3, index 2 does not exist
    (V["goset"]["chnk_example"]["packet"][14:], [], []),
])
@pytest.mark.parametrize("policy", PRESETS)
def test_chnk_is_answered_round_robin_with_the_preset_credit(policy, body, reference, default):
    node = make_node(vector_store(), policy)
    expected = reference if policy is REFERENCE else default
    assert ask(node, TWO_CHNK + H(body)) == [chunk(FEED0, s, c) for s, c in expected]


def test_chnk_of_the_worked_example_is_answered():
    node = make_node(worked_store(2))
    # wire-compat sec 4: "feed 0, entry 2, chunks from #1"
    assert ask(node, W_DMX_CHNK + H("3c340a000a020a01")) == [W2_CHUNK1]
    assert ask(node, W_DMX_CHNK + H("3c340a000a020a00")) == [W[1].chunks[0], W2_CHUNK1]


# --- what the Node asks for --------------------------------------------------------------

@pytest.mark.parametrize("policy", PRESETS)
def test_own_want_and_chnk_match_the_worked_example(policy):
    out = run(make_node(worked_store(2, chunks_of_2=1), policy), 0.0, 10.0)
    wants = [o.frame for o in out if o.kind is FrameKind.WANT]
    chnks = [o.frame for o in out if o.kind is FrameKind.CHNK]
    assert wants and set(wants) == {H("d7dec91eb68b9c240a000a03")}
    assert chnks and set(chnks) == {H("9a7b5ec267e7d03c340a000a020a01")}


def test_complete_feed_sends_no_chnk():
    out = run(make_node(worked_store(2)), 0.0, 10.0)
    assert [o.frame for o in out if o.frame[:7] == W_DMX_WANT]
    assert not [o for o in out if o.frame[:7] == W_DMX_CHNK]


@pytest.mark.parametrize("policy", PRESETS)
def test_goset_of_the_vector_keys_claims_claim_all_and_uses_the_vector_dmx(policy):
    node = make_node(keys_store(KEYS), policy)
    out = run(node, 0.0, 16.0)
    assert CLAIM_ALL in goset_frames(out)
    # every replica is empty: "feeds 0..4 from seq 1", under the vector WANT DMX
    wants = [o.frame for o in out if o.kind is FrameKind.WANT]
    assert wants[0] == VEC_WANT_DMX + H("640a000a010a010a010a010a01")
    # the vector WANT and CHNK examples are recognised as requests for this set; the
    # node holds no entry of these feeds, so (like the reference) it answers nothing
    assert node.receive(16.0, "a", VEC_WANT).kind is FrameKind.WANT
    assert node.receive(16.0, "a", VEC_CHNK).kind is FrameKind.CHNK
    assert not [o for o in node.frames_to_send(16.0) if o.kind in (FrameKind.ENTRY,
                                                                     FrameKind.CHUNK)]


def test_vector_requests_are_not_ours_under_another_set():
    node = make_node(keys_store(KEYS[:4]))
    run(node, 0.0, 0.0)
    assert node.receive(0.0, "a", VEC_WANT).drop is Drop.NO_MATCH
    assert node.receive(0.0, "a", VEC_CHNK).drop is Drop.NO_MATCH


def test_own_want_lists_as_many_feeds_as_the_python_reference():
    keys = sorted(FeedKey.from_seed(bytes([i]) * 32).fid for i in range(1, 61))
    node = make_node(keys_store(keys))
    wants = [o.frame for o in run(node, 0.0, 5.0) if o.kind is FrameKind.WANT]
    # reference: append seq, enc_len += 2, stop once enc_len > 100 -> 51 slots
    assert wants[0] == want_dmx(xor(*keys)) + bipf.encode([0] + [1] * 51)


# --- GOSET ------------------------------------------------------------------------------

def test_claim_1_2_teaches_the_two_missing_keys():
    node = make_node(keys_store([KEYS[0], KEYS[3], KEYS[4]]))
    run(node, 0.0, 1.0)
    node.receive(1.0, "a", CLAIM_1_2)
    out = run(node, 1.0, 17.0)
    # the next round: the full claim of all five keys and nothing else (our claim over
    # 1..2 now equals theirs, so there is nothing to ask or help with)
    assert goset_frames(out) == [CLAIM_ALL]
    assert {o.frame[:7] for o in out if o.kind is FrameKind.WANT} == {VEC_WANT_DMX}


def test_novelties_build_the_vector_set():
    node = make_node(MemoryStore())
    assert run(node, 0.0, 30.0) == []  # an empty set sends nothing at all
    for k in reversed(KEYS):
        assert node.receive(30.0, "a", novelty(k)).kind is FrameKind.NOVELTY
    assert goset_frames(run(node, 30.0, 30.0)) == [CLAIM_ALL]


def test_claim_of_our_whole_set_adds_nothing():
    node = make_node(keys_store(KEYS))
    run(node, 0.0, 1.0)
    node.receive(1.0, "a", CLAIM_ALL)
    assert goset_frames(run(node, 1.0, 17.0)) == [CLAIM_ALL]


def test_missing_middle_key_is_added_without_a_pending_claim():
    node = make_node(keys_store([KEYS[0], KEYS[1], KEYS[3], KEYS[4]]))
    run(node, 0.0, 1.0)
    node.receive(1.0, "a", claim_over(KEYS[1:4]))  # cnt 3, ends adjacent in our set
    # KEYS[2] = xor ^ lo ^ hi is known at once: the WANT DMX is the vector's right away
    assert node.receive(1.0, "a", VEC_WANT).kind is FrameKind.WANT
    assert node.goset.pending_count == 0
    assert goset_frames(run(node, 1.0, 17.0)) == [CLAIM_ALL]  # no ask, no help


def test_claim_with_ends_apart_waits_and_is_asked_about():
    node = make_node(keys_store([KEYS[0], KEYS[1], KEYS[4]]))
    run(node, 0.0, 1.0)
    node.receive(1.0, "a", claim_over(KEYS[1:4]))  # adds KEYS[3]; KEYS[2] still missing
    out = goset_frames(run(node, 1.0, 17.0))
    held = [KEYS[0], KEYS[1], KEYS[3], KEYS[4]]
    # our full claim, then the ask: our own claim over KEYS[1]..KEYS[3] (2 keys, not 3)
    assert out == [claim_over(held), claim_over([KEYS[1], KEYS[3]])]


SEVEN = sorted(KEYS + [F0, F1])


@pytest.mark.parametrize("lo, hi, cnt, x, expected", [
    # the peer holds only the two end keys of 7: inner 5 keys -> two half claims (2 + 3)
    pytest.param(0, 6, 2, None, [claim_over(SEVEN[1:3]), claim_over(SEVEN[3:6])],
                 id="inner5-two-claims"),
    pytest.param(0, 4, 2, None, [claim_over(SEVEN[1:4])], id="inner3-one-claim"),
    pytest.param(2, 5, 2, None, [claim_over(SEVEN[3:5])], id="inner2-one-claim"),
    pytest.param(3, 5, 2, None, [novelty(SEVEN[4])], id="inner1-novelty"),
    # no inner key (the peer's count is off) -> the hi key as a novelty
    pytest.param(3, 4, 1, SEVEN[3], [novelty(SEVEN[4])], id="inner0-hi-novelty"),
    # same count, different xor: ask with our claim, then help
    pytest.param(1, 4, 4, bytes(32), [claim_over(SEVEN[1:5]), claim_over(SEVEN[2:4])],
                 id="equal-count-ask-and-help"),
])
def test_claim_over_a_range_where_we_hold_more_gets_help(lo, hi, cnt, x, expected):
    faces = (Face("a"), Face("b"))
    node = make_node(keys_store(SEVEN), faces=faces)
    run(node, 0.0, 1.0)
    x = x if x is not None else xor(SEVEN[lo], SEVEN[hi])
    node.receive(1.0, "a", claim(SEVEN[lo], SEVEN[hi], x, cnt))
    out = run(node, 1.0, 17.0)
    full = claim_over(SEVEN)
    assert goset_frames(out, "a") == [full, *expected]  # help goes where the claim came from
    assert goset_frames(out, "b") == [full]


def test_help_goes_out_once_then_the_claim_is_forgotten():
    node = make_node(keys_store(SEVEN))
    run(node, 0.0, 1.0)
    node.receive(1.0, "a", claim(SEVEN[0], SEVEN[6], xor(SEVEN[0], SEVEN[6]), 2))
    out = goset_frames(run(node, 1.0, 50.0))
    full = claim_over(SEVEN)
    assert out == [full, claim_over(SEVEN[1:3]), claim_over(SEVEN[3:6]), full, full]


def test_zap_is_counted_and_never_answered_or_obeyed():
    node = make_node(worked_store(2), faces=(Face("a"), Face("b")))
    run(node, 0.0, 1.0)
    zap = GOSET + b"z" + bytes(range(32)) + bytes(3) + H("ffffffff")
    assert len(zap) == 47
    report = node.receive(1.0, "a", zap)
    assert (report.kind, report.drop) == (FrameKind.ZAP, Drop.ZAP)
    assert node.stats.drops["zap"] == 1
    out = run(node, 1.0, 60.0)
    assert not [o for o in out if o.frame[:8] == GOSET + b"z"]
    assert goset_frames(out) and all(f[7:8] == b"c" for f in goset_frames(out))
    # nothing was wiped: the feed is still served
    assert ask(node, W_DMX_WANT + H("240a000a01"), now=60.0) == [W[0].packet, W[1].packet]


@pytest.mark.parametrize("frame", [
    pytest.param(CLAIM_ALL + b"\x00", id="claim-padded"),
    pytest.param(CLAIM_ALL[:-1], id="claim-cut"),
    pytest.param(novelty(KEYS[0]) + b"\x00", id="novelty-padded"),
    pytest.param(novelty(KEYS[0])[:-1], id="novelty-cut"),
    pytest.param(GOSET + b"x" + bytes(97), id="unknown-type"),
    pytest.param(GOSET, id="dmx-only"),
])
def test_padded_or_cut_goset_packets_are_dropped(frame):
    node = make_node(MemoryStore())
    report = node.receive(0.0, "a", frame)
    assert report.drop in (Drop.BAD_GOSET, Drop.TOO_SHORT)
    assert run(node, 0.0, 60.0) == []  # learned no key: still silent
    # control: the exact claim is taken
    node.receive(60.0, "a", CLAIM_ALL)
    assert goset_frames(run(node, 60.0, 60.0)) == [claim_over([KEYS[0], KEYS[4]])]


# --- DEFAULT's quieter GOSET ---------------------------------------------------------------

def test_default_skips_its_claim_when_a_neighbour_just_made_it():
    node = make_node(keys_store(KEYS), DEFAULT)
    node.receive(0.0, "a", CLAIM_ALL)
    out = run(node, 0.0, 3.99)  # the first Trickle interval is 4 s
    assert CLAIM_ALL not in goset_frames(out)
    # a node that heard nothing does claim in the same interval
    lone = make_node(keys_store(KEYS), DEFAULT)
    assert CLAIM_ALL in goset_frames(run(lone, 0.0, 3.99))


def test_default_restart_does_not_announce_feeds_the_neighbourhood_has():
    node = make_node(keys_store(KEYS), DEFAULT)
    out: list[Outgoing] = []
    t = 0.0
    while t < 120.0:  # the neighbour claims the same set every 2 s
        node.receive(t, "a", CLAIM_ALL)
        out += run(node, t, t + 2.0)
        t += 2.0
    assert [f for f in goset_frames(out) if f[7:8] == b"n"] == []


# --- DEFAULT's request pacing (found with bench/bench_replication.py) ------------------------

@functools.cache
def _hundred_feeds(have: int, more: int) -> tuple[tuple[Entry, ...], ...]:
    """100 feeds of ``have`` entries; the first one has ``more`` on top."""
    feeds = []
    for f in range(100):
        key = FeedKey.from_seed(bytes([7]) + f.to_bytes(31, "big"))
        count = have + (more if f == 0 else 0)
        feeds.append(tuple(build_feed(key, [b"%d" % seq for seq in range(1, count + 1)])))
    return tuple(feeds)


def test_default_keeps_asking_while_a_peer_keeps_answering():
    have, more = 130, 40
    feeds = _hundred_feeds(have, more)
    src, dst = MemoryStore(), MemoryStore()
    for entries in feeds:
        rs, rd = src.add_feed(entries[0].fid), dst.add_feed(entries[0].fid)
        for e in entries:
            rs.append_own(e)
        for e in entries[:have]:
            rd.append_own(e)
    mesh = Mesh(rng=random.Random(1))  # ideal link, 10 ms each way
    mesh.add("src", DEFAULT, src)
    mesh.add("dst", DEFAULT, dst)
    mesh.link("src", "dst")
    news = dst.replica(feeds[0][0].fid)
    # 40 entries, 5 per WANT, 3 WANT windows per cycle: a few seconds at most
    mesh.run_until(lambda: news.max_seq == have + more, limit=20.0)


# --- faces --------------------------------------------------------------------------------

def test_crc_face_checks_and_adds_the_trailer():
    node = make_node(worked_store(2), faces=(Face("lora", crc=True),))
    want = W_DMX_WANT + H("240a000a01")
    answer = ask(node, add_crc(want), face="lora")
    # wire-compat sec 5: entry 1 of the worked example goes out with trailer e1063266
    assert answer == [W[0].packet + H("e1063266"), add_crc(W[1].packet)]
    assert ask(node, want, face="lora") == []  # no trailer
    assert ask(node, want + H("e1063267"), face="lora") == []  # wrong trailer
    assert node.stats.drops["crc"] == 2


def test_answers_go_only_to_the_requesting_face():
    faces = (Face("lora", crc=True), Face("ble"), Face("ws"))
    node = make_node(worked_store(2, chunks_of_2=None), faces=faces)
    run(node, 0.0, 0.0)
    node.receive(0.0, "ble", W_DMX_WANT + H("240a000a02"))
    node.receive(0.0, "lora", add_crc(W_DMX_CHNK + H("3c340a000a020a01")))
    out = node.frames_to_send(0.0)
    assert [(o.face, o.frame) for o in out] == [("lora", add_crc(W2_CHUNK1)),
                                                ("ble", W[1].packet)]


def test_frames_longer_than_a_packet_are_dropped():
    node = make_node(worked_store(2))
    frame = W_DMX_WANT + H("240a000a01")
    assert ask(node, frame + bytes(120 - len(frame) + 1)) == []
    assert ask(node, frame) == [W[0].packet, W[1].packet]
