"""Send queues and airtime budgets: what a face lets out, and when."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from gateway.replication import Node
from gateway.replication.events import FrameKind
from gateway.replication.faces import AirtimeBudget, Face, Priority, Queued, SendQueue
from gateway.store.memory import MemoryStore
from gateway.wire import bipf
from gateway.wire.crc import add_crc
from gateway.wire.entry import FeedKey
from gateway.wire.goset import want_dmx
from gateway.wire.lora import profile


def q(packet: bytes, prio: Priority, supersede: str | None = None) -> Queued:
    return Queued(packet, prio, FrameKind.ENTRY, supersede)


def test_answers_go_before_goset_before_requests() -> None:
    sq = SendQueue(5)
    sq.put(q(b"want", Priority.REQUEST, "want"))
    sq.put(q(b"claim", Priority.GOSET))
    sq.put(q(b"e1", Priority.ANSWER))
    sq.put(q(b"e2", Priority.ANSWER))
    assert [sq.pop().packet for _ in range(4)] == [b"e1", b"e2", b"claim", b"want"]


def test_no_packet_twice_and_newer_requests_replace_older() -> None:
    sq = SendQueue(5)
    assert sq.put(q(b"e1", Priority.ANSWER))
    assert not sq.put(q(b"e1", Priority.ANSWER))
    assert sq.put(q(b"want-1", Priority.REQUEST, "want"))
    assert sq.put(q(b"want-2", Priority.REQUEST, "want"))
    assert [x.packet for x in sq.items] == [b"e1", b"want-2"]
    assert sq.superseded == 1


def test_a_full_queue_drops_requests_for_answers_but_not_answers_for_requests() -> None:
    sq = SendQueue(2)
    sq.put(q(b"w", Priority.REQUEST, "want"))
    sq.put(q(b"c", Priority.REQUEST, "chnk"))
    assert sq.put(q(b"e1", Priority.ANSWER))  # evicts the newest request
    assert [x.packet for x in sq.items] == [b"e1", b"w"]
    assert sq.put(q(b"e2", Priority.ANSWER))
    assert not sq.put(q(b"e3", Priority.ANSWER))  # answers never evict answers
    assert not sq.put(q(b"w2", Priority.REQUEST))
    assert [x.packet for x in sq.items] == [b"e1", b"e2"]
    assert sq.dropped == 4


ops = st.lists(st.tuples(st.binary(min_size=1, max_size=3), st.sampled_from(list(Priority)),
                         st.sampled_from([None, "want", "chnk"])), max_size=40)


@given(ops, st.integers(1, 6))
def test_queue_invariants(items: list[tuple[bytes, Priority, str | None]], cap: int) -> None:
    sq = SendQueue(cap)
    for packet, prio, sup in items:
        sq.put(q(packet, prio, sup))
        packets = [x.packet for x in sq.items]
        assert len(packets) == len(set(packets)) <= cap
        prios = [x.priority for x in sq.items]
        assert prios == sorted(prios)
        sups = [x.supersede for x in sq.items if x.supersede]
        assert len(sups) == len(set(sups))


def test_airtime_budget_waits_for_old_airtime_to_leave_the_window() -> None:
    b = AirtimeBudget(0.01, 100.0)  # 1 s of airtime per 100 s
    assert b.allows(0.0, 0.6)
    b.spend(0.0, 0.6)
    b.spend(10.0, 0.3)
    assert b.allows(20.0, 0.1) and not b.allows(20.0, 0.2)
    assert b.earliest(20.0, 0.2) == 100.0  # when the 0.6 s spent at t=0 expires
    assert b.earliest(20.0, 0.75) == 110.0
    assert b.earliest(20.0, 1.5) == float("inf")  # can never fit
    assert b.used(105.0) == 0.3


def test_lora_face_airtime_includes_the_crc_trailer() -> None:
    params = profile("EU868.a")
    face = Face.lora_radio("lora", params)
    assert face.airtime(120) == params.airtime(124)
    assert abs(face.airtime(120) - 0.205) < 0.001
    assert Face("ws").airtime(120) == 0.0



def test_a_packet_that_can_never_fit_is_dropped_not_blocking_the_queue() -> None:
    params = profile("EU868.a")
    # a budget of 0.15 s per minute: a 124-byte entry frame (0.205 s) and a 109-byte claim
    # frame (0.19 s) never fit; WANTs and novelties do, and must not be held up
    small = Face("lora", crc=True, lora=params, duty_cycle=0.15 / 60, duty_window=60.0)
    narrow = Face("ble", mtu=40)  # below a 105-byte claim and a 120-byte entry
    node = Node(MemoryStore(), rng=random.Random(1))
    node.add_face(small, 0.0)
    node.add_face(narrow, 0.0)
    key = FeedKey.from_seed(bytes(32))
    node.publish(key, b"x", 0.0)
    want = want_dmx(key.fid) + bipf.encode([0, 1])  # a 1-key set: its XOR is the key
    assert node.receive(0.0, "lora", add_crc(want)).answers == 1
    assert node.receive(0.0, "ble", want).answers == 1
    sent = []
    t = 0.0
    while t < 200.0:
        sent += node.frames_to_send(t)
        t = max(t + 0.01, node.next_deadline() or t + 1.0)
    lora = [o.kind for o in sent if o.face == "lora"]
    assert FrameKind.WANT in lora and FrameKind.NOVELTY in lora
    assert FrameKind.ENTRY not in lora and FrameKind.CLAIM not in lora
    assert all(len(o.frame) <= 40 for o in sent if o.face == "ble")
    assert node.stats.queue_dropped >= 2
