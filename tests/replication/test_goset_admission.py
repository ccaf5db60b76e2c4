"""GOSET admission (issue 14, case 2): spam cannot partition honest nodes for good.

Before: 4,000 random keys named to one node and 3,000 to another filled both GOSETs to
the 100-key cap with different garbage; their WANT/CHNK DMX differed and no new entry
ever crossed. Now a face may name only ``goset_new_keys_per_face`` new keys per interval, unproven
keys leave after ``goset_probation``, and a deny-list / allow-list applies to feeds on
disk at start as well."""

from __future__ import annotations

import random

import pytest

from gateway.replication.node import Node
from gateway.replication.policy import DEFAULT
from gateway.store import MemoryStore
from gateway.wire.entry import FeedKey
from gateway.wire.goset import Claim, Novelty

from .mesh import Mesh, author, converged

PROBATION = 120.0
POLICY = DEFAULT.with_(goset_probation=PROBATION, goset_new_keys_per_face=16)


def spam(node: Node, now: float, rng: random.Random, n: int) -> None:
    for i in range(n):
        key = rng.randbytes(32)
        if i % 2:
            packet = Novelty(key).encode()
        else:
            lo, hi = sorted((key, rng.randbytes(32)))
            packet = Claim(lo, hi, rng.randbytes(32), 5).encode()
        node.receive(now, "radio", packet)


@pytest.mark.parametrize("allow_list", [False, True])
def test_spammed_nodes_reconverge_and_a_new_honest_feed_reaches_both(allow_list) -> None:
    rng = random.Random(5)
    mesh = Mesh()
    src = mesh.add("src", POLICY)
    honest = [author(src, 10 + i, [b"x%d" % j for j in range(3)]) for i in range(5)]
    newcomer_seed = 99
    policy = POLICY
    if allow_list:
        fids = [k.fid for k in honest] + [FeedKey.from_seed(
            newcomer_seed.to_bytes(32, "big")).fid]
        policy = POLICY.with_(replicate_all=False, allow=frozenset(fids))
    a, b = mesh.add("a", policy), mesh.add("b", policy)
    mesh.link_all()
    expected = {k.fid: 3 for k in honest}
    mesh.run_until(lambda: converged([a, b], expected), 600)
    # the attack: different garbage to each
    spam(a, mesh.now, rng, 4000)
    spam(b, mesh.now, rng, 3000)
    assert len(a.goset) <= 5 + 16 and len(b.goset) <= 5 + 16  # (before: 100 and 100)
    # after the probation the garbage has left both sets: the same set again
    mesh.run_for(3 * PROBATION + 60)
    assert a.goset.state == b.goset.state == src.goset.state
    assert len(a.store) == len(b.store) == 5
    assert a.admission.expired + a.admission.refused_rate + a.admission.refused_denied > 0
    # a new honest feed reaches both
    key = author(src, newcomer_seed, [b"new %d" % i for i in range(4)], mesh.now)
    mesh.run_until(lambda: converged([a, b], expected | {key.fid: 4}), 600)


def test_deny_list_and_allow_list_apply_to_feeds_on_disk_at_start() -> None:
    store = MemoryStore()
    node = Node(store)
    keys = [author(node, 40 + i, [b"e"]) for i in range(3)]
    empty = bytes(range(32))
    store.add_feed(empty)  # a key some spammer named in an earlier run
    denied = DEFAULT.with_(deny=frozenset([keys[0].fid]))
    restarted = Node(store, policy=denied, own=[keys[2].fid])
    assert keys[0].fid not in restarted.goset and keys[1].fid in restarted.goset
    assert empty in restarted.goset and empty in restarted.admission.unproven
    allowed = DEFAULT.with_(replicate_all=False, allow=frozenset([keys[1].fid]))
    restarted = Node(store, policy=allowed, own=[keys[2].fid])
    assert sorted(restarted.goset.keys) == sorted([keys[1].fid, keys[2].fid])
    # the empty spam feed ages out and its replica is removed
    node = Node(store, policy=DEFAULT.with_(goset_probation=10.0))
    node.frames_to_send(11.0)
    assert empty not in node.goset and empty not in store
