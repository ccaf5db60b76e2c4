"""Nodes linked in memory converge on the union of their feeds, under virtual time."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.replication import DEFAULT, REFERENCE, Face, FeedAdded, NewEntry, Policy
from gateway.wire.crc import strip_crc
from gateway.wire.lora import profile

from .mesh import Fate, Mesh, author, converged, verified_log

PRESETS = [REFERENCE, DEFAULT]
ids = [p.name for p in PRESETS]


def posts(tag: str, n: int, size: int = 10) -> list[bytes]:
    return [(f"{tag}-{i}-".encode() * size)[: max(size, 1)] for i in range(n)]


def check_logs(mesh: Mesh) -> None:
    """Every stored entry verifies against its predecessor; every chunk against its chain."""
    for node in mesh.nodes.values():
        store = node.store
        for fid in store.feeds():
            for seq, _ in enumerate(verified_log(store, fid), 1):
                assert store.read_content(fid, seq) is not None


@pytest.mark.parametrize("policy", PRESETS, ids=ids)
def test_two_nodes_exchange_feeds_and_long_side_chains(policy: Policy) -> None:
    mesh = Mesh()
    a, b = mesh.add("a", policy), mesh.add("b", policy)
    mesh.link("a", "b")
    ka = author(a, 1, posts("a", 30) + [bytes(range(256)) * 20])  # 5120 B: 52 chunks
    kb = author(b, 2, posts("b", 5, 300))
    t = mesh.run_until(lambda: converged([a, b], {ka.fid: 31, kb.fid: 5}), limit=600)
    assert t < 600
    check_logs(mesh)
    assert b.store.read_content(ka.fid, 31) == bytes(range(256)) * 20
    assert a.store.read_content(kb.fid, 5) == posts("b", 5, 300)[4]


def test_events_tell_upper_layers_what_arrived() -> None:
    mesh = Mesh()
    a, b = mesh.add("a"), mesh.add("b")
    mesh.link("a", "b")
    ka = author(a, 1, [b"short", b"L" * 400])
    assert [type(e) for e in a.drain_events()] == [NewEntry, NewEntry]
    mesh.run_until(lambda: converged([a, b], {ka.fid: 2}), limit=120)
    events = b.drain_events()
    assert events[0] == FeedAdded(ka.fid)
    news = [e for e in events if isinstance(e, NewEntry)]
    assert [(e.seq, e.n_chunks, e.own) for e in news] == [(1, 0, False), (2, 4, False)]
    completes = [(e.fid, e.seq) for e in events if type(e).__name__ == "ChainComplete"]
    assert completes == [(ka.fid, 2)]


@pytest.mark.parametrize("policy", PRESETS, ids=ids)
def test_three_nodes_in_a_line_relay_through_the_middle(policy: Policy) -> None:
    mesh = Mesh()
    nodes = [mesh.add(n, policy) for n in "abc"]
    mesh.link("a", "b")
    mesh.link("b", "c")
    keys = [author(node, i + 1, posts(node.name, 4 + i, 150)) for i, node in enumerate(nodes)]
    expected = {k.fid: 4 + i for i, k in enumerate(keys)}
    mesh.run_until(lambda: converged(nodes, expected), limit=1800)
    check_logs(mesh)


@pytest.mark.parametrize("policy", PRESETS, ids=ids)
def test_ten_nodes_with_differing_gosets_converge(policy: Policy) -> None:
    rng = random.Random(10)
    mesh = Mesh(rng=random.Random(11))
    nodes = [mesh.add(f"n{i}", policy) for i in range(10)]
    # a random connected topology: a spanning chain plus random extra links
    order = list(range(10))
    rng.shuffle(order)
    for x, y in itertools.pairwise(order):
        mesh.link(f"n{x}", f"n{y}")
    for _ in range(6):
        x, y = rng.sample(range(10), 2)
        mesh.link(f"n{x}", f"n{y}")
    expected = {}
    for i, node in enumerate(nodes[:7]):  # three nodes start with nothing at all
        key = author(node, 100 + i, posts(node.name, 1 + i % 4, 60 + 40 * i))
        expected[key.fid] = 1 + i % 4
    mesh.run_until(lambda: converged(nodes, expected), limit=7200)
    check_logs(mesh)


@pytest.mark.parametrize("policy", PRESETS, ids=ids)
def test_partition_heals(policy: Policy) -> None:
    mesh = Mesh()
    nodes = [mesh.add(n, policy) for n in "abcd"]
    mesh.link("a", "b")
    mesh.link("c", "d")
    ka = author(nodes[0], 1, posts("a", 6, 120))
    kc = author(nodes[2], 3, posts("c", 3, 20))
    mesh.run_until(lambda: converged(nodes[:2], {ka.fid: 6}), limit=600)
    mesh.run_until(lambda: converged(nodes[2:], {kc.fid: 3}), limit=600)
    assert ka.fid not in nodes[3].store and kc.fid not in nodes[1].store
    kb = author(nodes[1], 2, posts("b", 2), now=mesh.now)  # written during the partition
    mesh.link("b", "c")  # the partition heals
    mesh.run_until(lambda: converged(nodes, {ka.fid: 6, kb.fid: 2, kc.fid: 3}), limit=1800)
    check_logs(mesh)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), loss=st.floats(0.0, 0.5), dup=st.floats(0.0, 0.3),
       jitter=st.floats(0.0, 2.0), policy=st.sampled_from(PRESETS))
def test_loss_duplicates_and_reordering_do_not_stop_convergence(
        seed: int, loss: float, dup: float, jitter: float, policy: Policy) -> None:
    fate_rng = random.Random(seed)

    def fate(_n: int, _src: str, _dst: str, _frame: bytes) -> Fate:
        if fate_rng.random() < loss:
            return Fate(drop=True)
        copies = 2 if fate_rng.random() < dup else 1
        return Fate(copies=copies, extra_delay=fate_rng.uniform(0.0, jitter))

    mesh = Mesh(rng=random.Random(seed ^ 0x5A5A), fate=fate)
    nodes = [mesh.add(n, policy) for n in "abc"]
    mesh.link_all()
    ka = author(nodes[0], 1, posts("a", 5, 90))
    kb = author(nodes[1], 2, [b"B" * 1000])
    mesh.run_until(lambda: converged(nodes, {ka.fid: 5, kb.fid: 1}), limit=20000)
    check_logs(mesh)


def test_allow_list_keeps_other_feeds_out() -> None:
    mesh = Mesh()
    a = mesh.add("a")
    ka = author(a, 1, [b"x"])
    kb = author(a, 2, [b"y"])
    picky = DEFAULT.with_(replicate_all=False, allow=frozenset({ka.fid}))
    p = mesh.add("p", picky)
    mesh.link("a", "p")
    mesh.run_for(120)
    assert kb.fid not in p.store  # met in a's claims, refused by policy
    assert p.store.feeds() in ([], [ka.fid])


@pytest.mark.parametrize("policy", PRESETS, ids=ids)
def test_lora_duty_cycle_is_never_exceeded(policy: Policy) -> None:
    params = profile("EU868.a")  # SF7/125 kHz: ~205 ms per full frame
    face = Face("radio", crc=True, lora=params, duty_cycle=0.01, duty_window=600.0,
                min_gap=1.35)
    sent: dict[str, list[tuple[float, float]]] = {}
    mesh = Mesh(face=face)
    mesh.on_tx = lambda t, src, out: sent.setdefault(src, []).append((t, out.airtime))
    a, b = mesh.add("a", policy), mesh.add("b", policy)
    mesh.link("a", "b")
    ka = author(a, 1, posts("a", 8, 40))
    mesh.run_until(lambda: converged([a, b], {ka.fid: 8}), limit=6 * 3600)
    for src, log in sent.items():
        assert all(air >= params.airtime(12) for _, air in log), src
        starts = [t for t, _ in log]
        assert all(y - x >= 1.35 - 1e-9 for x, y in itertools.pairwise(starts)), src
        for t0, _ in log:  # any 600 s window starting at a transmission
            used = sum(air for t, air in log if t0 <= t < t0 + 600.0)
            assert used <= 6.0 + 1e-6, (src, t0, used)


def test_crc_face_frames_carry_the_trailer_and_still_replicate() -> None:
    mesh = Mesh(face=Face("radio", crc=True))
    frames: list[bytes] = []
    mesh.on_tx = lambda t, src, out: frames.append(out.frame)
    a, b = mesh.add("a"), mesh.add("b")
    mesh.link("a", "b")
    ka = author(a, 1, [b"x" * 200])
    mesh.run_until(lambda: converged([a, b], {ka.fid: 1}), limit=300)
    assert all(len(strip_crc(f)) == len(f) - 4 for f in frames)
    assert b.store.read_content(ka.fid, 1) == b"x" * 200
