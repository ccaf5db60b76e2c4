"""Garbage in, nothing bad out: random and mutated frames never break a Node.

A Node holding parts of three honest feeds (plus one of its own) is fed 100,000 frames
(1,000,000 with ``TINYSSB_LONG_FUZZ=1``): random bytes of random lengths, valid packets
with flipped bits, cut short or extended, and frames that carry exactly the DMX values
the Node listens to (the armed DMX of every feed's next entry, the GOSET DMX, its current
WANT and CHNK DMX), on a plain face and on a CRC face. Afterwards:

* ``receive`` never raised, and nothing the Node sent was longer than a packet, lacked
  its CRC on the CRC face, or was a zap;
* every entry stored verifies (signature chain from the feed id) and every chunk sits on
  its hash chain, and all of it is byte for byte what the honest authors published;
  feeds the garbage made up hold nothing;
* the same Node, linked to an honest peer, still converges.

A smaller hypothesis property drives fresh Nodes with generated frame sequences.
"""

from __future__ import annotations

import os
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.replication import DEFAULT, REFERENCE, Face, NewEntry, Node, Policy
from gateway.store.memory import MemoryStore
from gateway.wire import bipf
from gateway.wire.crc import add_crc, strip_crc
from gateway.wire.entry import (
    PACKET_LEN,
    TYPE_PLAIN48,
    Entry,
    FeedKey,
    build_feed,
    content_of,
)
from gateway.wire.errors import WireError
from gateway.wire.goset import GOSET_DMX, chnk_dmx, want_dmx
from tests import vectors
from tests.replication.mesh import Mesh, verified_log

H = bytes.fromhex


# --- the honest world -----------------------------------------------------------------

KEY_A = FeedKey.from_seed(b"\xa1" * 32)
_LENGTHS = (10, 27, 28, 100, 250, 0, 330)  # 0..4 chunks
# feed A grows after the garbage: its author publishes entries 31..35 then
FEED_A = build_feed(KEY_A, [(bytes([s % 251]) * _LENGTHS[s % 7], 1) for s in range(1, 36)])
LATER = 5


def _honest_feeds() -> dict[bytes, list[Entry]]:
    v = vectors.load()["feeds"][0]  # the reference vector feed: chunks, a plain48 entry
    b = FeedKey.from_seed(H(v["seed"]))
    feed_b = build_feed(b, [(H(e["content"]), e["type"]) for e in v["entries"]])
    assert [e.packet for e in feed_b] == [H(e["packet"]) for e in v["entries"]]
    c = FeedKey.from_seed(b"\xc3" * 32)
    feed_c = build_feed(c, [(b"c%d" % s, TYPE_PLAIN48 if s % 2 else 1) for s in range(1, 13)])
    return {KEY_A.fid: FEED_A[:-LATER], b.fid: feed_b, c.fid: feed_c}


HONEST = _honest_feeds()
OWN = FeedKey.from_seed(b"\x0d" * 32)  # the fuzzed Node's own feed
OWN_CONTENTS = [b"own %d" % i * (i * 20) for i in range(1, 6)]
ALL_PACKETS = [e.packet for feed in HONEST.values() for e in feed]
ALL_CHUNKS = [c for feed in HONEST.values() for e in feed for c in e.chunks]

# what the Node holds before the garbage starts: (entries, chunks of the last entries)
PREFIX = {0: 12, 1: 2, 2: 0}


def entry_content(entry: Entry) -> bytes:
    return content_of(entry.packet, entry.chunks)


def _dut_store() -> MemoryStore:
    """Prefixes of the honest feeds; some side chains half received."""
    store = MemoryStore()
    for i, (fid, entries) in enumerate(HONEST.items()):
        store.add_feed(fid)
        for entry in entries[:PREFIX[i]]:
            store.ingest_entry(fid, entry.packet)
            for c in entry.chunks[: max(len(entry.chunks) - 1, 1) if entry.seq % 3 else 0]:
                store.ingest_chunk(c)
    return store


def _honest_store() -> MemoryStore:
    store = MemoryStore()
    for fid, entries in HONEST.items():
        replica = store.add_feed(fid)
        for entry in entries:
            replica.append_own(entry)
    return store


def make_dut(policy: Policy, seed: int) -> Node:
    node = Node(_dut_store(), policy=policy, rng=random.Random(seed), name="dut")
    node.add_face(Face("radio"), 0.0)
    node.add_face(Face("lora", crc=True), 0.0)
    for content in OWN_CONTENTS:
        node.publish(OWN, content, 0.0)
    return node


def check_store(node: Node) -> None:
    """Every stored entry verifies and is what its honest author published."""
    published = dict(HONEST)
    published[KEY_A.fid] = FEED_A
    published[OWN.fid] = build_feed(OWN, [(c, 1) for c in OWN_CONTENTS])
    store = node.store
    for fid in store.feeds():
        source = published.get(fid, [])
        log = verified_log(store, fid)  # raises on an invalid entry or chunk
        assert len(log) <= len(source), f"{fid.hex()[:8]}: entries nobody published"
        for (packet, chunks), entry in zip(log, source, strict=False):
            assert packet == entry.packet
            assert chunks == list(entry.chunks[: len(chunks)])


def check_sent(frames) -> None:
    for out in frames:
        if out.face == "lora":
            assert len(out.frame) <= PACKET_LEN + 4
            packet = strip_crc(out.frame)  # raises on a bad trailer
        else:
            assert len(out.frame) <= PACKET_LEN
            packet = out.frame
        assert packet[:8] != GOSET_DMX + b"z", "a zap was sent"


# --- frame generators --------------------------------------------------------------------

_INTS = (0, 1, 2, 3, 5, 7, 127, 128, 200, 255, 256, 2**15, 2**24 - 1, 2**24, 2**31 - 1,
         -1, -2, -128, -(2**31))


def rand_value(rng: random.Random, depth: int = 0):
    r = rng.random()
    if r < 0.55:
        return rng.choice(_INTS) if rng.random() < 0.7 else rng.randrange(-2**40, 2**40)
    if r < 0.62:
        return rng.choice((None, True, False))
    if r < 0.70:
        return rng.randbytes(rng.randrange(12))
    if r < 0.76:
        return "s" * rng.randrange(12)
    if r < 0.80:
        return rng.uniform(-1e6, 1e6)
    if depth < 4:
        return [rand_value(rng, depth + 1) for _ in range(rng.randrange(6))]
    return 0


def bipf_body(rng: random.Random, value) -> bytes:
    try:
        return bipf.encode(value)[:113]
    except WireError:
        return rng.randbytes(rng.randrange(20))


def mutate(rng: random.Random, packet: bytes) -> bytes:
    b = bytearray(packet)
    op = rng.randrange(6)
    if op <= 1 and b:  # flip 1..4 bits, anywhere (op 0) or after the DMX (op 1)
        lo = 7 if op == 1 and len(b) > 7 else 0
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(lo, len(b))
            b[i] ^= 1 << rng.randrange(8)
    elif op == 2:
        del b[rng.randrange(len(b) + 1):]
    elif op == 3:
        b += rng.randbytes(rng.randint(1, 12))
    elif op == 4 and b:
        i = rng.randrange(len(b))
        b[i:i + rng.randint(1, 8)] = rng.randbytes(rng.randint(0, 8))
    else:
        b = bytearray(packet[: len(packet) // 2] + rng.randbytes(len(packet) - len(packet) // 2))
    return bytes(b)


class Garbage:
    """Seeded frame factory aimed at what ``node`` listens to right now."""

    def __init__(self, rng: random.Random, node: Node) -> None:
        self.rng = rng
        self.node = node
        self.heard: list[bytes] = []  # frames the Node sent: valid GOSET/WANT/CHNK packets

    def key(self) -> bytes:
        rng, keys = self.rng, self.node.goset.keys
        r = rng.random()
        if keys and r < 0.996:
            return rng.choice(keys)
        return rng.randbytes(32) if r < 0.999 else bytes(32)  # a new key, or the zero key

    def goset(self) -> bytes:
        rng = self.rng
        kind = rng.choice(b"cccnnz?")
        if kind == ord("c"):
            lo, hi = sorted((self.key(), self.key()))
            body = b"c" + lo + hi + (self.key() if rng.random() < 0.5 else rng.randbytes(32))
            body += bytes([rng.choice((0, 1, 2, 3, 3, 4, len(self.node.goset), 255))])
        elif kind == ord("n"):
            body = b"n" + self.key()
        elif kind == ord("z"):
            body = b"z" + rng.randbytes(32) + bytes(3) + rng.randbytes(4)
        else:
            body = rng.randbytes(rng.randrange(120))
        frame = GOSET_DMX + body
        return mutate(rng, frame) if rng.random() < 0.2 else frame

    def want(self) -> bytes:
        rng = self.rng
        if rng.random() < 0.5:
            n = len(self.node.goset) + 3
            value = [rng.randrange(n)] + [rng.randrange(60) for _ in range(rng.randrange(12))]
        else:
            value = rand_value(rng)
        return want_dmx(self.node.goset.state) + bipf_body(rng, value)

    def chnk(self) -> bytes:
        rng = self.rng
        if rng.random() < 0.5:
            n = len(self.node.goset) + 3
            value = [[rng.randrange(n), rng.randrange(40), rng.randrange(6)]
                     for _ in range(rng.randrange(1, 9))]
        else:
            value = rand_value(rng)
        return chnk_dmx(self.node.goset.state) + bipf_body(rng, value)

    def armed(self) -> bytes:
        """A frame with the DMX of some feed's next entry."""
        rng, store = self.rng, self.node.store
        fid = rng.choice(store.feeds())
        dmx = store.replica(fid).next_dmx()
        source = HONEST.get(fid)
        seq = store.replica(fid).max_seq + 1
        if source and seq <= len(source) and rng.random() < 0.6:
            return mutate(rng, source[seq - 1].packet)  # almost the right entry
        n = rng.choice((PACKET_LEN, PACKET_LEN, PACKET_LEN, rng.randrange(8, 130)))
        return dmx + rng.randbytes(n - 7)

    def frame(self) -> bytes:
        rng = self.rng
        r = rng.random()
        if r < 0.14:
            return rng.randbytes(rng.randrange(201))
        if r < 0.30:
            return self.armed()
        if r < 0.44:
            return self.goset()
        if r < 0.56:
            return self.want()
        if r < 0.66:
            return self.chnk()
        if r < 0.74:
            return rng.choice(ALL_PACKETS + ALL_CHUNKS)  # honest, possibly new to the Node
        pool = self.heard if self.heard and rng.random() < 0.3 else ALL_PACKETS + ALL_CHUNKS
        return mutate(rng, rng.choice(pool))


def feed_garbage(node: Node, rng: random.Random, n: int, now: float = 0.0) -> float:
    """Send ``n`` generated frames into ``node``; return the virtual time reached."""
    gen = Garbage(rng, node)
    for i in range(n):
        frame = gen.frame()
        if rng.random() < 0.15:  # the CRC face: mostly good trailers, some bad, some none
            r = rng.random()
            framed = add_crc(frame) if r < 0.8 else frame if r < 0.9 else mutate(rng,
                                                                            add_crc(frame))
            node.receive(now, "lora", framed)
        else:
            node.receive(now, "radio", frame)
        if i % 8 == 7:
            now += rng.uniform(0.0, 0.4)
            sent = node.frames_to_send(now)
            check_sent(sent)
            gen.heard = (gen.heard + [o.frame for o in sent if o.face == "radio"])[-64:]
            for ev in node.drain_events():
                if isinstance(ev, NewEntry) and not ev.own:
                    source = HONEST.get(ev.fid)
                    assert source is not None, "an entry of a feed nobody published"
                    assert ev.msg_id == source[ev.seq - 1].msg_id
    return now


# --- the tests -------------------------------------------------------------------------

def _done(dut: Node, peer: Node) -> bool:
    for fid, entries in HONEST.items():
        r = dut.store.get(fid)
        n = len(FEED_A) if fid == KEY_A.fid else len(entries)
        if r is None or r.max_seq != n or r.missing_chunks():
            return False
    own = peer.store.get(OWN.fid)
    return (own is not None and own.max_seq == len(OWN_CONTENTS) and not own.missing_chunks()
            and dut.goset.keys == peer.goset.keys)


def garbage_then_replication(n: int) -> None:
    rng = random.Random(20240917)
    dut = make_dut(DEFAULT, seed=1)
    now = feed_garbage(dut, rng, n)
    check_store(dut)
    assert sum(dut.stats.drops.values()) > n // 2  # most of it was refused ...
    assert dut.stats.entries_stored > 0  # ... and honest packets among it were taken
    # link it with an honest peer holding every honest feed, whose author of feed A
    # goes on writing: the Node still learns the news, and the peer learns the Node's feed
    dut.remove_face("lora")
    mesh = Mesh(rng=random.Random(2), now=now)
    mesh.nodes["dut"] = dut
    peer = mesh.add("peer", REFERENCE, _honest_store())
    mesh.link("dut", "peer")
    for entry in FEED_A[-LATER:]:
        assert peer.publish(KEY_A, entry_content(entry), mesh.now).packet == entry.packet
    mesh.run_until(lambda: _done(dut, peer), limit=3600.0)
    check_store(dut)


def test_100k_garbage_frames_then_replication_still_works():
    garbage_then_replication(100_000)


@pytest.mark.skipif(os.environ.get("TINYSSB_LONG_FUZZ") != "1",
                    reason="the 1M-frame fuzz takes about half a minute; run it with "
                           "TINYSSB_LONG_FUZZ=1 .venv/bin/pytest tests/replication/test_fuzz.py"
                           " -k 1m")
def test_1m_garbage_frames_then_replication_still_works():
    garbage_then_replication(1_000_000)


FRAMES = st.one_of(
    st.binary(max_size=200),
    st.sampled_from(ALL_PACKETS + ALL_CHUNKS),
    st.builds(lambda p, r: mutate(random.Random(r), p),
              st.sampled_from(ALL_PACKETS + ALL_CHUNKS), st.integers(0, 2**32)),
    st.builds(lambda b: GOSET_DMX + b, st.binary(max_size=113)),
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(policy=st.sampled_from([REFERENCE, DEFAULT]),
       steps=st.lists(st.tuples(st.sampled_from(["radio", "lora", "lora-bad"]), FRAMES,
                                st.floats(0.0, 5.0), st.booleans()), max_size=40))
def test_any_frame_sequence_is_harmless(policy, steps):
    dut = make_dut(policy, seed=3)
    gen = Garbage(random.Random(len(steps)), dut)
    now = 0.0
    for face, frame, dt, aimed in steps:
        if aimed:  # a frame with one of the DMX values the Node listens to now
            frame = gen.frame()
        if face == "radio":
            dut.receive(now, face, frame)
        else:
            framed = add_crc(frame)
            dut.receive(now, "lora", framed if face == "lora" else framed[:-1] + b"?")
        now += dt
        check_sent(dut.frames_to_send(now))
    check_store(dut)
