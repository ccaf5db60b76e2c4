"""WANT/CHNK vectors longer than 120 B on IP faces (issue 15, item 2).

The reference tinyISP ISP puts every unfinished side chain of a set into one CHNK
request (202, 223, 321 and 356 B seen). On an IP face (MTU :data:`IP_MTU`) such a
vector is answered within the policy's credit; on a radio face (MTU 120) it is dropped,
and so is any entry, chunk or GOSET packet over 120 B, whatever the face.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.replication import REFERENCE, Drop, Face, FaceKind, FrameKind, Node
from gateway.replication.faces import IP_MTU
from gateway.replication.policy import IP
from gateway.store.memory import MemoryStore
from gateway.wire import bipf
from gateway.wire.entry import Entry, FeedKey, build_feed, hash20
from gateway.wire.goset import GOSET_DMX, chnk_dmx, want_dmx

KEY = FeedKey.from_seed(bytes([0x52]) * 32)
FEED = build_feed(KEY, [bytes([s % 251]) * 250 for s in range(1, 141)])  # 3 chunks each


def feed_store(feed: list[Entry] = FEED) -> MemoryStore:
    store = MemoryStore()
    replica = store.add_feed(feed[0].fid)
    for entry in feed:
        replica.append_own(entry)
    return store


def reference_isp_chnk(dmx: bytes, fndx: int = 0) -> tuple[bytes, list[tuple[int, int]]]:
    """A 356-byte CHNK as the reference ISP writes it: one ``[fndx, seq, 0]`` triple for
    every unfinished chain (45 entries below seq 128, 4 above), Python BIPF ints."""
    seqs = list(range(1, 46)) + list(range(130, 134))
    packet = dmx + bipf.encode([[fndx, s, 0] for s in seqs])
    assert len(packet) == 356
    return packet, [(s, 0) for s in seqs]


def long_want(dmx: bytes, n_slots: int) -> bytes:
    return dmx + bipf.encode([0, *([1] * n_slots)])


def ip_node(store: MemoryStore, policy=IP) -> Node:  # type: ignore[no-untyped-def]
    node = Node(store, policy=policy, rng=random.Random(7))
    node.add_face(Face("ws", kind=FaceKind.POINT_TO_POINT, mtu=IP_MTU, queue_size=512), 0.0)
    node.add_face(Face("radio"), 0.0)
    return node


def sent(node: Node, face: str, until: float = 1.0) -> list[bytes]:
    """The entries and chunks sent on ``face`` (answers; not our own claims and WANTs)."""
    return [o.frame for o in node.frames_to_send(until)
            if o.face == face and o.kind in (FrameKind.ENTRY, FrameKind.CHUNK)]


def first_credit(policy) -> int:  # type: ignore[no-untyped-def]
    """What a first request gets: the adaptive credit starts small (pacing.py)."""
    return policy.credit_min if policy.adaptive_credit else policy.credit


CHUNK_AT = {hash20(c): (e.seq, cnr) for e in FEED for cnr, c in enumerate(e.chunks)}


@pytest.mark.parametrize("policy", [IP, REFERENCE], ids=lambda p: p.name)
def test_a_356_byte_chnk_on_an_ip_face_is_answered_within_the_credit(policy) -> None:  # type: ignore[no-untyped-def]
    node = ip_node(feed_store(), policy)
    frame, asked = reference_isp_chnk(chnk_dmx(KEY.fid))
    report = node.receive(0.5, "ws", frame)
    assert report.kind is FrameKind.CHNK and report.drop is None
    out = sent(node, "ws")
    assert report.answers == len(out) == first_credit(policy)
    got = [CHUNK_AT[hash20(c)] for c in out]
    assert set(got) <= {(s, c) for s, _ in asked for c in range(3)}
    assert not sent(node, "radio")  # answers go where the request came from


def test_the_same_vector_on_a_radio_face_is_too_long() -> None:
    node = ip_node(feed_store())
    frame, _ = reference_isp_chnk(chnk_dmx(KEY.fid))
    report = node.receive(0.5, "radio", frame)
    assert report.drop is Drop.TOO_LONG
    assert node.stats.drops["too_long"] == 1


def test_a_long_chnk_under_a_bound_set_is_answered() -> None:
    """The tinyISP case: the vector is for a contract's data set, not the GOSET."""
    other = FeedKey.from_seed(bytes([0x53]) * 32).fid
    store = feed_store()
    node = ip_node(store)
    node.set_keys("data", [KEY.fid, other], 0.0)
    fndx = sorted([KEY.fid, other]).index(KEY.fid)
    frame, _ = reference_isp_chnk(node._sets["data"].chnk_dmx, fndx)
    report = node.receive(0.5, "ws", frame)
    assert report.kind is FrameKind.CHNK and report.answers == first_credit(IP)


def test_a_long_want_is_answered_and_longer_than_the_mtu_is_dropped() -> None:
    node = ip_node(feed_store())
    report = node.receive(0.5, "ws", long_want(want_dmx(KEY.fid), 200))
    assert report.kind is FrameKind.WANT and report.answers > 0
    too_long = long_want(want_dmx(KEY.fid), IP_MTU)
    assert len(too_long) > IP_MTU
    assert node.receive(0.6, "ws", too_long).drop is Drop.TOO_LONG


@pytest.mark.parametrize("frame", [
    pytest.param(GOSET_DMX + b"c" + bytes(200), id="goset"),
    pytest.param(FEED[0].packet + bytes(10), id="entry-padded"),
    pytest.param(bytes(7) + bytes(200), id="unknown-dmx"),
])
def test_only_request_vectors_may_exceed_120_bytes(frame: bytes) -> None:
    node = ip_node(feed_store())
    assert node.receive(0.5, "ws", frame).drop is Drop.TOO_LONG


@settings(max_examples=200, deadline=None)
@given(body=st.binary(max_size=IP_MTU), is_want=st.booleans())
def test_any_body_up_to_the_mtu_is_parsed_safely(body: bytes, is_want: bool) -> None:
    node = ip_node(feed_store(FEED[:4]))
    dmx = want_dmx(KEY.fid) if is_want else chnk_dmx(KEY.fid)
    report = node.receive(0.5, "ws", (dmx + body)[:IP_MTU])
    assert report.answers <= IP.credit
    assert len(sent(node, "ws")) == report.answers
