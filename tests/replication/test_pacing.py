"""Answer pacing on IP faces (issue 15, item 3).

Our ``ip`` policy used to answer one WANT with up to 100 entries at once: over UDP
multicast an ESP32 (4-slot receive queue) lost 28 frames per burst. Now a UDP face
sends at most ``burst`` frames back to back, then ``rate`` per second, and the credit
per request starts at ``credit_min`` and grows only while the peer takes it all.
"""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.replication import DEFAULT, Face, FaceKind, FrameKind, Node
from gateway.replication.pacing import AnswerCredit, TokenBucket
from gateway.replication.policy import IP
from gateway.store.memory import MemoryStore
from gateway.transports.udp import UDP_BURST, UDP_RATE
from gateway.wire.crc import add_crc
from gateway.wire.entry import FeedKey, build_feed
from gateway.wire.goset import want_dmx
from gateway.wire.want import encode_want

KEY = FeedKey.from_seed(bytes([0x33]) * 32)
FEED = build_feed(KEY, [b"entry %d" % s for s in range(1, 101)])
UDP = Face("udp", kind=FaceKind.BROADCAST, crc=True, queue_size=64, rate=UDP_RATE,
           burst=UDP_BURST)


def node_with_feed(policy=IP, face: Face = UDP) -> Node:  # type: ignore[no-untyped-def]
    store = MemoryStore()
    replica = store.add_feed(KEY.fid)
    for e in FEED:
        replica.append_own(e)
    node = Node(store, policy=policy, rng=random.Random(3))
    node.add_face(face, 0.0)
    return node


def want(seq: int) -> bytes:
    return add_crc(encode_want(want_dmx(KEY.fid), 0, [seq]))


def entries_out(node: Node, start: float, end: float) -> list[tuple[float, int]]:
    """(time, seq) of every entry the node sends from ``start`` to ``end``, stepping to
    its own deadlines."""
    out, t = [], start
    while t <= end:
        out += [(t, o.seq) for o in node.frames_to_send(t) if o.kind is FrameKind.ENTRY]
        nxt = node.next_deadline()
        if nxt is None or nxt > end:
            break
        t = max(nxt, t + 1e-9)
    return out


def test_a_burst_on_udp_goes_out_4_at_once_then_at_the_rate() -> None:
    policy = IP.with_(adaptive_credit=False)  # the whole credit of 100 at once
    node = node_with_feed(policy)
    assert node.receive(1.0, "udp", want(1)).answers == UDP.queue_size  # what fits
    sent = entries_out(node, 1.0, 10.0)
    times = [t for t, _ in sent]
    assert [s for _, s in sent] == list(range(1, UDP.queue_size + 1))
    assert times[:UDP_BURST] == [1.0] * UDP_BURST  # the burst
    gaps = [b - a for a, b in zip(times[UDP_BURST:], times[UDP_BURST + 1:], strict=False)]
    assert all(abs(g - 1 / UDP_RATE) < 1e-6 for g in gaps)
    # never more than the burst within one rate interval: an ESP32's 4 slots suffice
    assert max(sum(1 for u in times if t <= u < t + 1 / UDP_RATE) for t in times) <= UDP_BURST


def test_the_credit_grows_while_the_peer_takes_everything_and_falls_when_it_does_not() -> None:
    node = node_with_feed(IP, Face("ws", kind=FaceKind.POINT_TO_POINT, queue_size=512))
    now, nxt, credits = 1.0, 1, []
    for _ in range(5):  # the peer takes every answer: 3, 6, 12, 24, 48
        answered = node.receive(now, "ws", encode_want(want_dmx(KEY.fid), 0, [nxt]))
        credits.append(answered.answers)
        entries_out(node, now, now + 0.01)
        nxt += answered.answers
        now += 1.0
    assert credits == [3, 6, 12, 24, 48]
    # it took only 5 of the 48 (a small receive queue): the next answer is 5 long
    assert node.receive(now, "ws", encode_want(want_dmx(KEY.fid), 0, [nxt - 48 + 5])).answers == 5


def test_a_request_that_crossed_our_answers_is_no_verdict() -> None:
    node = node_with_feed(IP, Face("ws", kind=FaceKind.POINT_TO_POINT, queue_size=512))
    assert node.receive(1.0, "ws", encode_want(want_dmx(KEY.fid), 0, [1])).answers == 3
    # asked again before our answers went out: the same 3 are queued already
    node.receive(1.0, "ws", encode_want(want_dmx(KEY.fid), 0, [1]))
    entries_out(node, 1.0, 1.01)
    assert node.receive(2.0, "ws", encode_want(want_dmx(KEY.fid), 0, [4])).answers == 6


def test_the_default_radio_policy_keeps_its_fixed_credit() -> None:
    assert not DEFAULT.adaptive_credit and IP.adaptive_credit
    node = node_with_feed(DEFAULT, Face("ws", kind=FaceKind.POINT_TO_POINT, queue_size=64))
    assert node._faces["ws"].credit is None  # type: ignore[attr-defined]


@settings(max_examples=100, deadline=None)
@given(takes=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=30),
       maximum=st.integers(1, 200), minimum=st.integers(1, 10))
def test_the_credit_stays_within_its_bounds(takes: list[float], maximum: int,
                                            minimum: int) -> None:
    c = AnswerCredit(maximum, minimum)
    seq = 1
    for share in takes:
        sent = c.value
        c.sent_entries({b"f": (seq, sent)})
        took = round(share * sent)
        c.want_seen({b"f": seq + took})
        seq += took
        assert min(minimum, maximum) <= c.value <= maximum
        if took == sent:
            assert c.value == min(maximum, 2 * sent)


@given(rate=st.floats(0.5, 1000.0), burst=st.integers(1, 16),
       asks=st.lists(st.floats(0.0, 0.5), min_size=1, max_size=60))
def test_a_token_bucket_never_exceeds_burst_plus_rate_times_time(
        rate: float, burst: int, asks: list[float]) -> None:
    b, t, sent = TokenBucket(rate, burst), 0.0, []
    for gap in asks:
        t = b.earliest(t + gap)
        b.spend(t)
        sent.append(t)
    for i, start in enumerate(sent):
        n = sum(1 for u in sent[i:] if u - start <= 1.0)
        assert n <= burst + rate * 1.0 + 1e-6
