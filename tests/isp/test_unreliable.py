"""Lost, repeated and reordered packets never lose or repeat a c2c message, and a reader
never hops before it has read the whole data feed."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.isp.messages import FeedhoppingFin, decode_message
from gateway.wire.entry import hash20

from .test_lifecycle import texts
from .world import Fate, Peer, onboard, star, subscribe


def fins_written(p: Peer) -> list[bytes]:
    store = p.node.store
    out = []
    for info in p.e.contracts():
        for seq in range(1, store.replica(info.ctrl_out).max_seq + 1):
            msg = decode_message(store.read_content(info.ctrl_out, seq) or b"")
            if isinstance(msg, FeedhoppingFin):
                out.append(msg.fid)
    return out


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), loss=st.floats(0.0, 0.35),
       dup=st.floats(0.0, 0.3), jitter=st.floats(0.0, 1.5))
def test_loss_duplication_and_reordering(seed: int, loss: float, dup: float,
                                         jitter: float) -> None:
    rng = random.Random(seed)

    def fate(_n: int, _src: str, _dst: str, _frame: bytes) -> Fate:
        return Fate(drop=rng.random() < loss, copies=2 if rng.random() < dup else 1,
                    extra_delay=rng.uniform(0.0, jitter))

    w = star(2, seed=seed % 1000, fate=fate)
    onboard(w, "c0", limit=3000)
    onboard(w, "c1", limit=3000)
    subscribe(w, "c0", "c1", limit=3000)
    a, b = w.peers["c0"], w.peers["c1"]
    to_b, to_a = texts(110, "x"), texts(110, "y")
    for n in range(110):
        a.e.send(b.root.fid, to_b[n], w.now)
        b.e.send(a.root.fid, to_a[n], w.now)
    w.run_until(lambda: len(a.got) >= 110 and len(b.got) >= 110, limit=20000)
    w.run_for(20.0)
    assert [m.content for m in b.got] == to_b
    assert [m.content for m in a.got] == to_a
    assert len(fins_written(a)) >= 2 and len(fins_written(w.peers["isp"])) >= 4


def test_no_hop_while_an_entry_before_next_is_incomplete() -> None:
    blocked: set[bytes] = set()
    state = {"block": True}

    def fate(_n: int, src: str, dst: str, frame: bytes) -> Fate:
        drop = state["block"] and src == "isp" and dst == "c1" and hash20(frame) in blocked
        return Fate(drop=drop)

    w = star(2, fate=fate)
    onboard(w, "c0")
    onboard(w, "c1")
    subscribe(w, "c0", "c1")
    a, b, i = w.peers["c0"], w.peers["c1"], w.peers["isp"]
    (towards_b,) = [x for x in i.e.contracts() if x.peer == b.root.fid]
    feed = towards_b.data_out[0]
    msgs = [f"long message {n} ".encode() * 20 for n in range(60)]
    for m in msgs:
        a.e.send(b.root.fid, m, w.now)

    def block_entry_20() -> bool:
        if i.node.store.get(feed) is not None and i.node.store.replica(feed).max_seq >= 20:
            cnr = 0
            while (chunk := i.node.store.read_chunk(feed, 20, cnr)) is not None:
                blocked.add(hash20(chunk))
                cnr += 1
            return True
        return False

    w.run_until(block_entry_20)
    # everything else of the feed arrives, next at seq 50 included; entry 20 stays open
    w.run_until(lambda: b.node.store.get(feed) is not None
                and b.node.store.replica(feed).max_seq >= 50
                and all(b.node.store.replica(feed).is_complete(s) for s in range(21, 51)),
                limit=600)
    w.run_for(30.0)
    assert not b.node.store.replica(feed).is_complete(20)
    assert len(b.got) == 18  # entries 2..19
    assert fins_written(b) == []
    (info,) = b.e.contracts()
    assert info.data_in == feed
    state["block"] = False
    w.run_until(lambda: len(b.got) == 60, limit=600)
    assert [m.content for m in b.got] == msgs
    assert fins_written(b) == [feed]
