"""Bound sets (tinyISP's per-contract sets) and feeds that live outside the GOSET."""

from __future__ import annotations

import random

import pytest

from gateway.replication import (
    ChainComplete,
    FeedAdded,
    FrameKind,
    NewEntry,
    Node,
    Outgoing,
    Policy,
    preset,
)
from gateway.store.memory import MemoryStore
from gateway.wire.entry import FeedKey, build_feed
from gateway.wire.goset import chnk_dmx, want_dmx, xor_keys

from .mesh import Mesh, converged, verified_log


def key(n: int) -> FeedKey:
    return FeedKey.from_seed(n.to_bytes(32, "big"))


def private_posts(node: Node, k: FeedKey, contents: list[bytes]) -> None:
    for c in contents:
        node.publish(k, c, 0.0, announce=False)


# what the vectors do, without the default preset's push of our own entries (which
# reaches every neighbour that holds the feed, set or no set: see the last test)
VECTORS_ONLY = [preset("reference"), preset("default").with_(push=False, novelties=True)]


@pytest.mark.parametrize("policy", VECTORS_ONLY, ids=["reference", "default-no-push"])
def test_a_bound_set_replicates_its_feeds_with_vectors_of_its_own(policy: Policy) -> None:
    mesh = Mesh()
    a, b = mesh.add("a", policy), mesh.add("b", policy)
    mesh.link("a", "b")
    ka, kb = key(1), key(2)
    contents = [b"hello", b"x" * 500, b"y" * 30]
    private_posts(a, ka, contents)
    private_posts(b, kb, [b"from b"])
    sent: list[Outgoing] = []
    mesh.on_tx = lambda _t, _src, out: sent.append(out)
    for node in (a, b):
        node.set_keys("ctrl", [ka.fid, kb.fid], mesh.now)
    mesh.run_until(lambda: converged([a, b], {ka.fid: 3, kb.fid: 1}), limit=300)
    assert b.store.read_content(ka.fid, 2) == b"x" * 500
    assert verified_log(b.store, ka.fid)
    state = xor_keys(sorted([ka.fid, kb.fid]))
    dmx = {out.frame[:7] for out in sent if out.kind in (FrameKind.WANT, FrameKind.CHNK)}
    assert want_dmx(state) in dmx and chnk_dmx(state) in dmx
    # the feeds never joined the GOSET: no claim or novelty names them
    assert ka.fid not in a.goset and ka.fid not in b.goset
    assert not any(out.kind in (FrameKind.CLAIM, FrameKind.NOVELTY) for out in sent)


@pytest.mark.parametrize("policy", VECTORS_ONLY, ids=["reference", "default-no-push"])
def test_vectors_are_bound_to_the_key_set_both_sides_hold(policy: Policy) -> None:
    mesh = Mesh()
    a, b = mesh.add("a", policy), mesh.add("b", policy)
    mesh.link("a", "b")
    ka, other = key(1), key(9)
    private_posts(a, ka, [b"one", b"two"])
    a.set_keys("data", [ka.fid], mesh.now)
    b.set_keys("data", [ka.fid, other.fid], mesh.now)  # not the same set: no answers
    mesh.run_for(120)
    assert b.store.replica(ka.fid).max_seq == 0
    b.set_keys("data", [ka.fid], mesh.now)
    mesh.run_until(lambda: b.store.replica(ka.fid).max_seq == 2, limit=120)
    assert b.sets == {"data": [ka.fid]}


@pytest.mark.parametrize("policy", VECTORS_ONLY, ids=["reference", "default-no-push"])
def test_dropping_a_set_stops_its_replication_and_keeps_the_feeds(policy: Policy) -> None:
    mesh = Mesh()
    a, b = mesh.add("a", policy), mesh.add("b", policy)
    mesh.link("a", "b")
    ka = key(1)
    private_posts(a, ka, [b"one"])
    for node in (a, b):
        node.set_keys("s", [ka.fid], mesh.now)
    mesh.run_until(lambda: b.store.replica(ka.fid).max_seq == 1, limit=120)
    b.set_keys("s", [], mesh.now)
    private_posts(a, ka, [b"two"])
    mesh.run_for(120)
    assert b.sets == {} and b.store.replica(ka.fid).max_seq == 1
    assert b.next_deadline() is None  # nothing left to ask for


def test_feeds_outside_the_goset_stay_outside_after_a_restart() -> None:
    store = MemoryStore()
    node = Node(store, rng=random.Random(1))
    shared, private = key(1), key(2)
    node.publish(shared, b"public", 0.0)
    node.publish(private, b"secret", 0.0, announce=False)
    assert node.goset.keys == [shared.fid]
    again = Node(store, rng=random.Random(1), goset_filter=lambda fid: fid != private.fid)
    assert again.goset.keys == [shared.fid]
    assert private.fid in again.store


def test_tunnelled_packets_are_verified_and_may_arrive_out_of_order() -> None:
    node = Node(MemoryStore(), rng=random.Random(1))
    k = key(3)
    entries = build_feed(k, [b"first", b"z" * 250, b"third"])
    node.add_feed(k.fid, 0.0)
    assert node.drain_events() == [FeedAdded(k.fid)]
    second = entries[1]
    assert node.ingest(1.0, second.packet) == []  # not armed yet: its predecessor is missing
    stored = node.ingest(1.0, entries[0].packet)
    assert [(s.seq, s.cnr) for s in stored] == [(1, None)]
    assert [(s.seq, s.cnr) for s in node.ingest(2.0, second.packet)] == [(2, None)]
    for chunk in second.chunks:
        node.ingest(2.0, chunk)
    events = node.drain_events()
    assert [e.seq for e in events if isinstance(e, NewEntry)] == [1, 2]
    assert ChainComplete(k.fid, 2) in events
    assert node.store.read_content(k.fid, 2) == b"z" * 250
    forged = bytearray(entries[2].packet)
    forged[20] ^= 1
    assert node.ingest(3.0, bytes(forged)) == []
    assert node.store.replica(k.fid).max_seq == 2
    assert node.drain_events() == []


def test_forget_deletes_a_feed_everywhere_but_never_a_goset_feed() -> None:
    node = Node(MemoryStore(), rng=random.Random(1))
    public, a, b = key(1), key(2), key(3)
    node.publish(public, b"p", 0.0)
    private_posts(node, a, [b"a"])
    node.set_keys("ctrl", [a.fid, b.fid], 0.0)
    node.forget(a.fid)
    assert a.fid not in node.store
    assert node.sets == {"ctrl": [b.fid]}
    node.forget(b.fid)
    assert node.sets == {}
    with pytest.raises(ValueError):
        node.forget(public.fid)
    entries = build_feed(a, [b"again"])
    assert node.ingest(1.0, entries[0].packet) == []  # no longer armed


@pytest.mark.parametrize("radio", [True, False], ids=["lora-1%", "free"])
def test_many_bound_sets_share_a_small_queue_and_all_replicate(radio: bool) -> None:
    """Ten sets on a face with a five-frame queue (a 1 % LoRa radio, or a free link):
    asking all of them every round would crowd the queue (and the duty cycle) so that
    the last ones never get a turn; in turn, each one does."""
    from gateway.replication import Face
    from gateway.wire.lora import profile

    face = (Face.lora_radio("radio", profile("EU868.a"), duty_cycle=0.01, queue_size=5)
            if radio else Face("radio", queue_size=5))
    mesh = Mesh(face=face)
    a, b = mesh.add("a"), mesh.add("b")
    mesh.link("a", "b")
    keys = [key(100 + i) for i in range(10)]
    for i, k in enumerate(keys):
        private_posts(a, k, [b"entry %d" % i])
        for node in (a, b):
            node.set_keys(f"set{i}", [k.fid], mesh.now)
    mesh.run_until(lambda: converged([b], {k.fid: 1 for k in keys}), limit=4 * 3600)
