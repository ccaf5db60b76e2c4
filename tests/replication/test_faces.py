"""Send queues and airtime budgets: what a face lets out, and when."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gateway.replication.events import FrameKind
from gateway.replication.faces import AirtimeBudget, Face, Priority, Queued, SendQueue
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
