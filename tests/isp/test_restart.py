"""Restarts: any side, in the middle of any phase, and crashes between writing and saving.

A restart throws the Node and the engine away and builds both again from the same feed
store, state document and keys. A crash is a restart whose last state save did not
happen, although the entries appended before it did (the engine's handlers must then
replay safely).
"""

from __future__ import annotations

import logging
import random
from pathlib import Path

import pytest

from gateway.isp import (
    ContractParams,
    DirKeyStore,
    DirStateStore,
    IspEngine,
    Role,
)
from gateway.replication import Node
from gateway.store.disk import DiskStore
from gateway.wire.entry import FeedKey

from .test_lifecycle import texts
from .world import Peer, World, phase, star

POINTS = ["onboard-sent", "onboard-mid", "sub-sent", "sub-incoming", "sub-answered",
          "paused", "data", "farewell-init", "farewell-fin"]


def isp_towards(i: Peer, client: Peer):  # type: ignore[no-untyped-def]
    return [x for x in i.e.contracts() if x.peer == client.root.fid]


def delivered(p: Peer) -> int:
    return sum(s.delivered for s in p.e.subscriptions())


def run_scenario(w: World, at: str | None = None, victims: tuple[str, ...] = ()) -> None:
    """Onboard c0 and c1, subscribe, 150 messages each way through a flow-control pause,
    farewell of c0; restart ``victims`` at point ``at``."""
    a, b, i = w.peers["c0"], w.peers["c1"], w.peers["isp"]

    def point(name: str) -> None:
        if name == at:
            for v in victims:
                w.restart(v)

    i.e.follow(a.root.fid, w.now)
    i.e.follow(b.root.fid, w.now)
    cid_a = a.e.onboard(i.root.fid, w.now)
    cid_b = b.e.onboard(i.root.fid, w.now)
    w.pump()
    point("onboard-sent")
    w.run_until(lambda: phase(i, cid_a) is not None and phase(i, cid_b) is not None)
    point("onboard-mid")
    w.run_until(lambda: all(phase(p, c) == "established" for p in (a, b, i)
                            for c in ((cid_a,) if p is a else (cid_b,) if p is b
                                      else (cid_a, cid_b))))
    ref = a.e.subscribe(b.root.fid, w.now)
    w.pump()
    point("sub-sent")
    w.run_until(lambda: bool(b.e.requests()))
    point("sub-incoming")
    b.e.accept(ref, w.now)
    w.pump()
    point("sub-answered")
    w.run_until(lambda: a.e.outcome(ref) == "accepted")
    to_b, to_a = texts(150, "ab"), texts(150, "ba")
    w.mesh.unlink("isp", "c1")
    for n in range(150):
        a.e.send(b.root.fid, to_b[n], w.now)
        b.e.send(a.root.fid, to_a[n], w.now)
    w.run_until(lambda: isp_towards(i, b)[0].paused, limit=600)
    point("paused")
    w.mesh.link("isp", "c1")
    w.run_until(lambda: len(b.got) >= 70, limit=600)
    point("data")
    w.run_until(lambda: delivered(a) >= 150 and delivered(b) >= 150, limit=1200)
    assert [m.content for m in b.e.inbox()] == to_b
    assert [m.content for m in a.e.inbox()] == to_a
    a.e.leave(w.now)
    w.pump()
    point("farewell-init")
    w.run_until(lambda: "farewell_fin" in (phase(a, cid_a), phase(i, cid_a)), limit=600)
    point("farewell-fin")
    w.run_until(lambda: not a.e.contracts() and phase(i, cid_a) is None, limit=600)
    assert a.keys.fids() == []
    assert set(a.node.store.feeds()) == {p.root.fid for p in w.peers.values()}
    assert a.e.outcome(cid_a) == "terminated"
    w.crash_free_got = ([m.content for m in b.got], [m.content for m in a.got])  # type: ignore[attr-defined]
    w.expected = (to_b, to_a)  # type: ignore[attr-defined]


@pytest.mark.parametrize("victim", ["c0", "c1", "isp"])
@pytest.mark.parametrize("at", POINTS)
def test_restart_in_the_middle_of_each_phase(victim: str, at: str) -> None:
    w = star(2)
    run_scenario(w, at, (victim,))
    assert w.restarts == 1
    # a clean restart loses and repeats nothing
    assert w.crash_free_got == w.expected  # type: ignore[attr-defined]


@pytest.mark.parametrize("at", POINTS)
def test_everybody_restarts_at_once(at: str) -> None:
    w = star(2, seed=2)
    run_scenario(w, at, ("c0", "c1", "isp"))
    assert w.restarts == 3
    assert w.crash_free_got == w.expected  # type: ignore[attr-defined]


@pytest.mark.parametrize("seed", range(6))
def test_crashes_between_writing_and_saving(seed: int) -> None:
    """Saves fail at random points; what the engine wrote before each failure stays in the
    feeds. Nothing is lost, nothing is delivered twice into the inbox, the contract ends
    cleanly."""
    rng = random.Random(seed)
    crash_on = {name: set(rng.sample(range(1, 400), 14)) for name in ("isp", "c0", "c1")}
    w = star(2, seed=seed + 10, crash_on=crash_on)
    run_scenario(w)
    assert w.crashes >= 6
    got_b, got_a = w.crash_free_got  # type: ignore[attr-defined]
    to_b, to_a = w.expected  # type: ignore[attr-defined]
    # the delivery callback may repeat what a crash made us deliver again, nothing else
    assert list(dict.fromkeys(got_b)) == to_b and list(dict.fromkeys(got_a)) == to_a


def test_restart_on_disk(tmp_path: Path) -> None:
    """The same through the disk store, DirStateStore and DirKeyStore."""
    w = World(seed=5)
    params = ContractParams(farewell_delay=2.0)
    peers = {}
    for name, role in (("isp", Role.ISP), ("c0", Role.CLIENT)):
        root = FeedKey.from_seed(w.seed())
        peers[name] = (root, role)

    def start(name: str) -> IspEngine:
        root, role = peers[name]
        d = tmp_path / name
        old = w.mesh.nodes.pop(name, None)
        if old is not None:
            old.store.close()
        store = DiskStore(d / "data")
        state, keys = DirStateStore(d / "isp"), DirKeyStore(d / "isp")
        private = IspEngine.private_feeds(state, keys)
        node = Node(store, policy=w.policy, rng=random.Random(1), name=name, now=w.now,
                    goset_filter=lambda fid: fid not in private)
        node.add_face(w.mesh.face, w.now)
        w.mesh.nodes[name] = node
        if store.get(root.fid) is None:
            node.publish(root, b"hello", w.now)
        return IspEngine(node, root, role, state, keys, w.now, params=params,
                         seed_source=w.seed)

    engines = {name: start(name) for name in peers}
    w.link("isp", "c0")

    def run(done, limit: float = 300.0) -> None:  # type: ignore[no-untyped-def]
        start_t = w.now
        while not done():
            assert w.now - start_t < limit
            for name, e in engines.items():
                node = w.mesh.nodes[name]
                while events := node.drain_events():
                    e.on_events(events, w.now)
            w.mesh.step()

    engines["isp"].follow(peers["c0"][0].fid, w.now)
    cid = engines["c0"].onboard(peers["isp"][0].fid, w.now)
    run(lambda: engines["isp"].contracts() != [])
    engines["isp"] = start("isp")
    engines["c0"] = start("c0")
    run(lambda: all(c.state == "established" for e in engines.values() for c in e.contracts())
        and len(engines["c0"].contracts()) == 1)
    assert engines["c0"].contracts()[0].id == cid
    keys_file = tmp_path / "c0" / "isp" / "keys.json"
    assert keys_file.stat().st_mode & 0o777 == 0o600
    # contract feeds stay out of the global GOSET after a restart from disk
    engines["c0"] = start("c0")
    (info,) = engines["c0"].contracts()
    node = w.mesh.nodes["c0"]
    assert info.ctrl_out not in node.goset.keys and info.data_out[0] not in node.goset.keys
    assert info.ctrl_out in {k for keys in node.sets.values() for k in keys}
    for n in w.mesh.nodes.values():
        n.store.close()


def test_restart_after_a_hop_that_was_not_saved(caplog: pytest.LogCaptureFixture) -> None:
    """The writer appended next (seq 50) and prev (seq 1 of the new feed) but the state
    saying so was lost: at the next start the hop is taken up from the feed itself."""
    w = star(2)
    run_until_subscribed(w)
    a, b = w.peers["c0"], w.peers["c1"]
    w.mesh.unlink("isp", "c0")
    sent: list[bytes] = []
    while True:
        (info,) = a.e.contracts()
        if a.node.store.replica(info.data_out[-1]).max_seq == 48:
            break
        sent.append(f"before {len(sent)}".encode())
        a.e.send(b.root.fid, sent[-1], w.now)
    saved = a.state.load()
    sent.append(b"the one that hops")
    a.e.send(b.root.fid, sent[-1], w.now)
    (info,) = a.e.contracts()
    old = info.data_out[0]
    assert len(info.data_out) == 2 and a.node.store.replica(old).max_seq == 50
    assert saved is not None
    a.state.save(saved)  # as if the process had died before saving
    caplog.set_level(logging.INFO)
    w.restart("c0")
    assert any("taking up the hop" in r.getMessage() for r in caplog.records)
    (info,) = a.e.contracts()
    assert info.data_out[0] == old and len(info.data_out) == 2
    w.mesh.link("isp", "c0")
    sent += [f"after {n}".encode() for n in range(10)]
    for m in sent[-10:]:
        a.e.send(b.root.fid, m, w.now)
    w.run_until(lambda: len(b.got) >= len(sent), limit=600)
    w.run_for(5.0)
    assert [m.content for m in b.got] == sent


def run_until_subscribed(w: World) -> None:
    a, b, i = w.peers["c0"], w.peers["c1"], w.peers["isp"]
    for p in (a, b):
        i.e.follow(p.root.fid, w.now)
        p.e.onboard(i.root.fid, w.now)
    w.pump()
    w.run_until(lambda: len(i.e.contracts()) == 2
                and all(x.state == "established" for x in i.e.contracts()))
    w.run_until(lambda: all(p.e.contracts()[0].state == "established" for p in (a, b)))
    ref = a.e.subscribe(b.root.fid, w.now)
    w.run_until(lambda: bool(b.e.requests()))
    b.e.accept(ref, w.now)
    w.run_until(lambda: a.e.outcome(ref) == "accepted")
