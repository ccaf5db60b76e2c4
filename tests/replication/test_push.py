"""The default preset on radio faces: push relaying, counter suppression, repair on hints.

Nodes on LoRa faces (airtime counted, CRC trailer) linked in memory under virtual time.
"""

from __future__ import annotations

import random
from collections import Counter
from itertools import pairwise

from gateway.replication import FrameKind, Node, Outgoing, preset
from gateway.replication.events import Drop
from gateway.replication.faces import Face
from gateway.replication.relay import Relay, RelayQueue
from gateway.replication.requests import RequestBuilder
from gateway.store.memory import MemoryStore
from gateway.wire.crc import add_crc, strip_crc
from gateway.wire.entry import FeedKey, build_feed
from gateway.wire.goset import Claim, Novelty, decode_goset, want_dmx, xor_keys
from gateway.wire.lora import profile
from gateway.wire.want import decode_want, encode_want

from .mesh import Fate, Mesh, converged

DEFAULT = preset("default")
REFERENCE = preset("reference")
RADIO = Face.lora_radio("radio", profile("EU868.a"), duty_cycle=0.01)


def key(n: int) -> FeedKey:
    return FeedKey.from_seed(n.to_bytes(32, "big"))


def radio_mesh(names: list[str], policy=DEFAULT, seed: int = 1) -> Mesh:
    mesh = Mesh(rng=random.Random(seed), face=RADIO)
    for name in names:
        mesh.add(name, policy)
    return mesh


def count_tx(mesh: Mesh) -> Counter[tuple[str, str]]:
    sent: Counter[tuple[str, str]] = Counter()

    def on_tx(_t: float, src: str, out: Outgoing) -> None:
        sent[(src, out.kind.value)] += 1

    mesh.on_tx = on_tx
    return sent


def test_a_new_post_reaches_the_neighbours_by_push_alone() -> None:
    mesh = radio_mesh(["a", "b", "c"])
    mesh.link_all()
    sent = count_tx(mesh)
    k = key(1)
    mesh.nodes["a"].publish(k, b"hello " * 30, mesh.now)  # an entry and two chunks
    mesh.run_until(lambda: converged(list(mesh.nodes.values()), {k.fid: 1}), limit=60)
    # nobody had to ask: the novelty, the entry and its chunks were pushed
    assert not any(kind in ("want", "chnk") for (_, kind) in sent)
    assert sent[("a", "entry")] == 1 and sent[("a", "chunk")] == 2
    assert mesh.nodes["b"].store.read_content(k.fid, 1) == b"hello " * 30


def test_a_relay_heard_from_a_neighbour_is_not_sent_again() -> None:
    # four nodes that all hear each other: a's post reaches b, c and d at once; the first
    # of them to relay it is heard by the other two, whose own relays are cancelled
    mesh = radio_mesh(["a", "b", "c", "d"])
    mesh.link_all()
    sent = count_tx(mesh)
    k = key(2)
    mesh.nodes["a"].publish(k, b"x", mesh.now)
    mesh.run_until(lambda: converged(list(mesh.nodes.values()), {k.fid: 1}), limit=60)
    mesh.run_for(60)
    relays = sum(n for (src, kind), n in sent.items() if kind == "entry" and src != "a")
    assert relays == 1
    assert sum(n.stats.relays_cancelled for n in mesh.nodes.values()) >= 2


def test_an_idle_mesh_stays_quiet() -> None:
    def idle_airtime(policy) -> float:
        mesh = radio_mesh(["a", "b", "c", "d"], policy, seed=3)
        for a, b in (("a", "b"), ("b", "c"), ("c", "d")):
            mesh.link(a, b)
        keys = [key(10 + i) for i in range(3)]
        for i, k in enumerate(keys):
            mesh.nodes["abcd"[i]].publish(k, b"post", mesh.now)
        mesh.run_until(lambda: converged(list(mesh.nodes.values()),
                                         {k.fid: 1 for k in keys}), limit=900)
        mesh.run_for(600)  # let the news settle
        before = sum(n.stats.airtime for n in mesh.nodes.values())
        mesh.run_for(3600)
        return sum(n.stats.airtime for n in mesh.nodes.values()) - before

    quiet, polling = idle_airtime(DEFAULT), idle_airtime(REFERENCE)
    assert quiet < 10.0  # seconds of airtime in an idle hour, the four nodes together
    assert quiet < polling / 5


def test_a_late_joiner_catches_up() -> None:
    mesh = radio_mesh(["a", "b", "c"])
    mesh.link_all()
    keys = [key(20), key(21)]
    for k, name in zip(keys, "ab", strict=True):
        for i in range(4):
            mesh.nodes[name].publish(k, b"entry %d " % i * 20, mesh.now)
    want = {k.fid: 4 for k in keys}
    mesh.run_until(lambda: converged(list(mesh.nodes.values()), want), limit=900)
    mesh.run_for(1800)  # an hour later, long quiet, d comes along next to c only
    mesh.add("d")
    mesh.link("c", "d")
    mesh.run_until(lambda: converged([mesh.nodes["d"]], want), limit=1800)


def test_a_partition_heals() -> None:
    mesh = radio_mesh(["a", "b", "c", "d"])
    mesh.link("a", "b")
    mesh.link("c", "d")
    ka, kc = key(30), key(31)
    mesh.nodes["a"].publish(ka, b"left " * 20, mesh.now)
    mesh.nodes["c"].publish(kc, b"right " * 20, mesh.now)
    mesh.run_for(1200)  # each half converges on its own
    assert mesh.nodes["d"].store.get(ka.fid) is None
    mesh.link("b", "c")
    mesh.run_until(lambda: converged(list(mesh.nodes.values()), {ka.fid: 1, kc.fid: 1}),
                   limit=1800)


def test_an_entry_lost_on_the_way_is_fetched_after_a_hint() -> None:
    # a - b - c in a line; the link b -> c drops every entry frame of the first post, so c
    # hears its chunks without the entry: it keeps them, asks, and takes them once the
    # entry comes
    mesh = radio_mesh(["a", "b", "c"])
    mesh.link("a", "b")
    mesh.link("b", "c")
    k = key(40)
    entries = build_feed(k, [b"first", b"z" * 300])
    mesh.nodes["a"].publish(k, b"first", mesh.now)
    mesh.run_until(lambda: converged(list(mesh.nodes.values()), {k.fid: 1}), limit=300)
    mesh.run_for(60)  # their claims agree: they know each other's requests

    def lossy(_n: int, src: str, dst: str, frame: bytes) -> Fate:
        lost = (src, dst) == ("b", "c") and frame[:-4] == entries[1].packet
        return Fate(drop=lost and mesh.now < 120)

    mesh.fate = lossy
    mesh.nodes["a"].publish(k, b"z" * 300, mesh.now)
    took = mesh.run_until(lambda: converged(list(mesh.nodes.values()), {k.fid: 2}), limit=600)
    c = mesh.nodes["c"]
    assert c.store.read_content(k.fid, 2) == b"z" * 300
    assert c.stats.hints >= 1 and c.stats.orphans_adopted >= 1 and took < 300


def test_a_chunk_heard_before_its_entry_is_kept_and_taken() -> None:
    node = Node(MemoryStore(), policy=DEFAULT, rng=random.Random(1))
    node.add_face(RADIO, 0.0)
    k = key(50)
    node.follow(k.fid, 0.0)
    (entry,) = build_feed(k, [b"q" * 200])
    first = node.receive(1.0, "radio", add_crc(entry.chunks[0]))
    assert first.drop is Drop.NO_MATCH
    second = node.receive(1.5, "radio", add_crc(entry.packet))
    assert {(s.seq, s.cnr) for s in second.stored} == {(1, None), (1, 0)}
    assert node.stats.orphans_adopted == 1


def test_an_entry_heard_before_its_key_is_taken_when_the_key_comes() -> None:
    # a feed's first post can outrun its novelty: the entry is kept, and stored (and
    # pushed on) with the key, not only once some other entry or chunk comes by
    node = Node(MemoryStore(), policy=DEFAULT, rng=random.Random(3))
    node.add_face(RADIO, 0.0)
    k = key(54)
    (entry,) = build_feed(k, [b"first"])
    assert node.receive(1.0, "radio", add_crc(entry.packet), snr=5.0).drop is Drop.NO_MATCH
    taken = node.receive(2.0, "radio", add_crc(Novelty(k.fid).encode()), snr=5.0)
    assert taken.kind is FrameKind.NOVELTY
    assert [(s.fid, s.seq, s.cnr) for s in taken.stored] == [(k.fid, 1, None)]
    assert node.store.read_content(k.fid, 1) == b"first"
    sent: list[bytes] = []
    _send_until(node, 2.0, 60.0, sent)
    assert add_crc(entry.packet) in sent


def test_an_entry_heard_long_before_its_predecessor_is_still_taken() -> None:
    # the second entry of a feed comes first and the first one only 20 minutes later
    # (in a busy mesh's first hours keys and entries take that long to reach some
    # nodes); frames that stayed unplaceable meanwhile prompted a claim
    node = Node(MemoryStore(), policy=DEFAULT, rng=random.Random(2))
    node.add_face(RADIO, 0.0)
    k, stranger = key(52), key(53)
    node.follow(k.fid, 0.0)
    first, second = build_feed(k, [b"first", b"second"])
    assert node.receive(1.0, "radio", add_crc(second.packet)).drop is Drop.NO_MATCH
    for i, e in enumerate(build_feed(stranger, [b"a", b"b", b"c"])):  # an unknown feed
        assert node.receive(400.0 + 400.0 * i, "radio", add_crc(e.packet)).drop is Drop.NO_MATCH
    taken = node.receive(1200.0, "radio", add_crc(first.packet))
    assert {s.seq for s in taken.stored} == {1, 2}
    assert node.store.read_content(k.fid, 2) == b"second"


def _relayed_after_orphan(chunk_copies: int, policy=DEFAULT) -> set[FrameKind]:
    """What a node relays of a post whose chunk it heard ``chunk_copies`` times before
    the entry that makes the chunk expected."""
    node = Node(MemoryStore(), policy=policy, rng=random.Random(1))
    node.add_face(RADIO, 0.0)
    k = key(51)
    node.follow(k.fid, 0.0)
    (entry,) = build_feed(k, [b"q" * 200])
    for i in range(chunk_copies):
        node.receive(1.0 + i, "radio", add_crc(entry.chunks[0]))
    node.receive(5.0, "radio", add_crc(entry.packet))
    t, sent = 5.0, []
    while t < 120.0:
        sent += node.frames_to_send(t)
        t = max(t + 0.01, node.next_deadline() or t + 1.0)
    return {o.kind for o in sent if o.frame in (add_crc(entry.packet), add_crc(entry.chunks[0]))}


def test_a_chunk_heard_twice_before_its_entry_is_not_relayed() -> None:
    # two neighbours sent it: they hold it, and so does whoever heard them
    assert _relayed_after_orphan(2) == {FrameKind.ENTRY}
    # heard once, it goes on as any relay would (unless a second copy comes first)
    assert _relayed_after_orphan(1) == {FrameKind.ENTRY, FrameKind.CHUNK}
    assert _relayed_after_orphan(2, DEFAULT.with_(orphan_copies=False)) == {
        FrameKind.ENTRY, FrameKind.CHUNK}


def test_relays_of_one_feed_leave_in_order_whatever_their_delay() -> None:
    q = RelayQueue(redundancy=2, capacity=8)
    fid = bytes(32)
    q.schedule(Relay(b"entry", FrameKind.ENTRY, 5.0, 1, fid, 1))
    q.schedule(Relay(b"chunk", FrameKind.CHUNK, 1.0, 1, fid, 1, 0))  # drawn earlier
    q.schedule(Relay(b"other", FrameKind.ENTRY, 2.0, 1, b"\x01" * 32, 1))
    order = []
    while q.peek() is not None:
        order.append(q.pop().packet)
    assert order == [b"other", b"entry", b"chunk"]
    q.schedule(Relay(b"again", FrameKind.ENTRY, 0.0, 1, fid, 2))
    q.heard(b"again")  # a second copy: the neighbourhood has it
    assert b"again" not in q and q.cancelled == 1


def test_a_novelty_is_pushed_at_once_without_waiting_for_a_goset_round() -> None:
    node = Node(MemoryStore(), policy=DEFAULT, rng=random.Random(1))
    node.add_face(RADIO, 0.0)
    k = key(60)
    node.receive(0.0, "radio", add_crc(Novelty(k.fid).encode()))
    t, sent = 0.0, []
    while t < 10.0:
        sent += node.frames_to_send(t)
        t = max(t + 0.01, node.next_deadline() or t + 1.0)
    assert add_crc(Novelty(k.fid).encode()) in [o.frame for o in sent]



def _relay_delays(policy, rounds: int) -> list[float]:
    """A node in a dense neighbourhood: each round it hears a post of feed A three times
    (neighbours relay it: its own relay is cancelled) and a post of feed B once, which it
    relays itself and nobody ever relays on. How long each of its B relays waited."""
    node = Node(MemoryStore(), policy=policy, rng=random.Random(5))
    node.add_face(RADIO, 0.0)
    ka, kb = key(70), key(71)
    node.follow(ka.fid, 0.0)
    node.follow(kb.fid, 0.0)
    feed_a = build_feed(ka, [f"a {i}".encode() for i in range(rounds)])
    feed_b = build_feed(kb, [f"b {i}".encode() for i in range(rounds)])
    delays: list[float] = []
    t = 0.0
    for a, b in zip(feed_a, feed_b, strict=True):
        t += 120.0
        node.receive(t, "radio", add_crc(a.packet), snr=0.0)
        node.receive(t + 0.3, "radio", add_crc(a.packet), snr=0.0)
        node.receive(t + 0.6, "radio", add_crc(a.packet), snr=0.0)
        node.receive(t + 1.0, "radio", add_crc(b.packet), snr=0.0)
        heard, end = t + 1.0, t + 110.0
        while t < end:
            for out in node.frames_to_send(t):
                if out.frame[:-4] == b.packet:
                    delays.append(t - heard)
            t = min(end, max(t + 0.01, node.next_deadline() or end))
    return delays


def test_in_a_dense_mesh_a_node_whose_relays_nobody_takes_on_lets_others_go_first() -> None:
    window = DEFAULT.push_window * RADIO.airtime(120)
    delays = _relay_delays(DEFAULT, 160)
    assert len(delays) == 160  # it still relays every B post (nobody else did)
    assert delays[0] < window
    # neighbours relay what it hears, but never its own relays: those now wait past the
    # window, where a neighbour whose relays carry the flood would have gone first
    assert min(delays[-10:]) > window
    plain = _relay_delays(DEFAULT.with_(push_echo_weight=0.0), 160)
    assert max(plain) < window


# a duty cycle that a post every 2 minutes, relayed, keeps more than half spent
SCARCE = Face.lora_radio("radio", profile("EU868.a"), duty_cycle=0.002)


def _sparse_relays(policy, posts: int, *, echoed: bool, face: Face = RADIO,
                   seed: int = 6) -> list[float]:
    """A node in a sparse mesh: it hears each post once (nobody else around it relays
    what it hears). ``echoed``: a neighbour on the far side relays each of its relays on
    (a bridge); else nobody does (a leaf, whose only neighbour gave it the post). How
    long each relay it sent waited."""
    node = Node(MemoryStore(), policy=policy, rng=random.Random(seed))
    node.add_face(face, 0.0)
    k = key(72)
    node.follow(k.fid, 0.0)
    t, waited = 0.0, []
    for entry in build_feed(k, [f"p {i}".encode() for i in range(posts)]):
        t += 120.0
        node.receive(t, "radio", add_crc(entry.packet), snr=0.0)
        heard, end = t, t + 110.0
        while t < end:
            for out in node.frames_to_send(t):
                if out.frame[:-4] == entry.packet:
                    waited.append(t - heard)
                    if echoed:  # the far side takes it on
                        node.receive(t + 1.0, "radio", out.frame, snr=0.0)
            t = min(end, max(t + 0.01, node.next_deadline() or end))
    return waited


def test_a_lone_bridge_does_not_hold_back() -> None:
    # the same node with nobody else relaying around it (a bridge in a sparse mesh): the
    # far side relays on what it relays, and it keeps relaying every post within the
    # window, also while airtime is scarce
    window = DEFAULT.push_window * RADIO.airtime(120)
    for face in (RADIO, SCARCE):
        waited = _sparse_relays(DEFAULT, 100, echoed=True, face=face)
        assert len(waited) == 100 and max(waited) < window


def test_a_leaf_leaves_out_most_relays_that_reach_nobody_while_airtime_is_scarce() -> None:
    # a leaf: its only neighbour gave it every post and nobody relays on what it relays,
    # so its relays reach nobody new. While more than half of its budget is spent it
    # leaves them out (each one it still sends tests whether that changed), so its
    # spending settles near half the budget: here about two posts in three
    sent = _sparse_relays(DEFAULT, 160, echoed=False, face=SCARCE)
    assert 40 <= len(sent) <= 120
    # without the rule it relays every post; with airtime to spare it does too (a relay
    # that reaches nobody then costs little, and a sparse mesh may need it after all)
    assert len(_sparse_relays(DEFAULT.with_(push_echo_skip=0.0), 160, echoed=False,
                              face=SCARCE)) == 160
    assert len(_sparse_relays(DEFAULT, 160, echoed=False)) == 160


def _send_until(node: Node, t: float, end: float, sent: list[bytes] | None = None) -> float:
    """Let ``node`` send whatever it has due (onto an empty channel) from ``t`` to
    ``end``, in virtual time, adding the frames to ``sent`` if given; returns ``end``."""
    while t < end:
        out = node.frames_to_send(t)
        if sent is not None:
            sent += [o.frame for o in out]
        t = min(end, max(t + 0.01, node.next_deadline() or end))
    return t


def _answers_to_weak_wants(face: Face, snr: float, policy=DEFAULT) -> list[int]:
    """A node holding 30 posts of its own, its radio busy pushing them (more than half of
    a scarce budget spent), hears one neighbour's WANT for them three times at ``snr``
    dB: how many answers it queued each time."""
    node = Node(MemoryStore(), policy=policy, rng=random.Random(4))
    node.add_face(face, 0.0)
    k = key(81)
    for i in range(30):
        node.publish(k, f"post {i}".encode(), float(i))
    t = _send_until(node, 0.0, 600.0)  # the pushes go out as the budget allows
    want = add_crc(encode_want(want_dmx(xor_keys([k.fid])), 0, [1]))
    return [node.receive(t + 60.0 * i, "radio", want, snr=snr).answers for i in range(3)]


def test_a_request_over_a_weak_link_is_answered_only_when_it_comes_again() -> None:
    # heard 1 dB above the demodulation floor (-7.5 dB at SF7) while airtime is scarce:
    # stronger neighbours of the asker answer first; only the same request again (their
    # answers did not reach it) gets ours
    weak = DEFAULT.push_snr_low + 1.0
    assert _answers_to_weak_wants(SCARCE, weak) == [0, 5, 0]
    # a strong link is answered at once, every time the request comes
    assert _answers_to_weak_wants(SCARCE, 3.0)[0] == 5
    # with airtime to spare, or without the rule, a weak request is answered at once
    assert _answers_to_weak_wants(RADIO, weak)[0] == 5
    assert _answers_to_weak_wants(SCARCE, weak, DEFAULT.with_(answer_snr_margin=0.0))[0] == 5


def _first_want(node: Node, t: float, heard: float, horizon: float) -> float:
    """Run ``node`` from ``t`` on: how long after ``heard`` its first WANT goes out (inf:
    not within ``horizon`` seconds of it)."""
    while t < heard + horizon:
        for out in node.frames_to_send(t):
            if out.kind is FrameKind.WANT:
                return t - heard
        t = min(heard + horizon, max(t + 0.01, node.next_deadline() or heard + horizon))
    return float("inf")


def _busy_follower(face: Face, seed: int, policy, own: FeedKey, other: FeedKey,
                   contents: list[bytes], *, posts: int = 12, start: float = 0.0,
                   warmup: float = 900.0) -> tuple[Node, list, float]:
    """A node on ``face`` that follows ``other`` (built from ``contents``) and holds its
    first 2 entries, and whose radio pushed ``posts`` posts of its own (``own``) from
    ``start`` on, run until ``warmup`` seconds after ``start``: the node, the entries of
    ``other``, and the time reached. Requests may spend the whole budget here."""
    node = Node(MemoryStore(), policy=policy.with_(push_reserve=0.0), rng=random.Random(seed))
    node.add_face(face, 0.0)
    node.follow(other.fid, 0.0)
    entries = build_feed(other, contents)
    for entry in entries[:2]:
        node.receive(0.0, "radio", add_crc(entry.packet), snr=5.0)
    for i in range(posts):
        node.publish(own, f"post {i}".encode(), start + i)
    return node, entries, _send_until(node, 0.0, start + warmup)


def _hint_to_request(face: Face, seed: int, *, pushed: int = 0, policy=DEFAULT,
                     horizon: float = 120.0, posts: int = 12, start: float = 0.0,
                     warmup: float = 900.0) -> float:
    """A node whose radio pushed ``posts`` posts of its own from ``start`` on (12: more
    than half of a scarce budget) hears, ``warmup`` seconds after ``start``, a
    neighbour's WANT showing it holds two more entries of a feed we follow, and
    ``pushed`` of them come by push a second later: how long until our WANT goes out
    (inf: not within ``horizon`` seconds)."""
    own, other = key(82), key(83)
    node, entries, t = _busy_follower(face, seed, policy, own, other,
                                      [b"one", b"two", b"three", b"four"],
                                      posts=posts, start=start, warmup=warmup)
    slots = sorted([own.fid, other.fid])
    seqs = [posts + 1 if fid == own.fid else 5 for fid in slots]  # 4 entries of other
    node.receive(t, "radio", add_crc(encode_want(want_dmx(xor_keys(slots)), 0, seqs)),
                 snr=5.0)
    heard = t
    for entry in entries[2:2 + pushed]:
        node.receive(heard + 1.0, "radio", add_crc(entry.packet), snr=5.0)
    return _first_want(node, t, heard, horizon)


def test_a_hint_waits_longer_for_the_push_while_airtime_is_scarce() -> None:
    # request_delay (5 s) give or take half with airtime to spare; request_delay_scarce
    # (15 s) give or take half once more than half of the budget is spent
    plenty = [_hint_to_request(RADIO, seed) for seed in range(6)]
    scarce = [_hint_to_request(SCARCE, seed) for seed in range(6)]
    assert all(2.0 <= d <= 8.0 for d in plenty), plenty
    assert all(7.0 <= d <= 23.0 for d in scarce), scarce


def test_in_its_first_hour_a_face_that_spends_fast_counts_airtime_as_scarce_early() -> None:
    # 60 posts pushed in the first minutes spend about a third of the hour's budget:
    # less than half of it, but 10 minutes into the face's first hour that is a pace
    # that would spend it all; a hint's request waits request_delay_scarce (15 s give
    # or take half) instead of request_delay (5 s)
    early = [_hint_to_request(RADIO, seed, posts=60, warmup=600.0) for seed in range(6)]
    assert all(7.0 <= d <= 23.0 for d in early), early
    # the whole budget's half, as after the first hour: airtime to spare
    whole = DEFAULT.with_(push_skip_start=1.0)
    plain = [_hint_to_request(RADIO, seed, posts=60, warmup=600.0, policy=whole)
             for seed in range(6)]
    assert all(2.0 <= d <= 8.0 for d in plain), plain
    # the same spending an hour after the face came: airtime to spare
    later = [_hint_to_request(RADIO, seed, posts=60, start=3600.0, warmup=600.0)
             for seed in range(6)]
    assert all(2.0 <= d <= 8.0 for d in later), later


def test_a_hint_the_push_answered_brings_no_request_while_airtime_is_scarce() -> None:
    # the neighbour's WANT showed entries 3 and 4 of a feed; both came by push before our
    # request was due (7-23 s): it stays home
    assert all(_hint_to_request(SCARCE, seed, pushed=2, horizon=30.0) == float("inf")
               for seed in range(6))
    # one of them still missing: we ask, as without the rule
    assert all(_hint_to_request(SCARCE, seed, pushed=1, horizon=30.0) < 23.0
               for seed in range(6))
    # with airtime to spare a request costs little, and in a sparse mesh it is also what
    # shows the neighbours what we hold: it goes
    assert all(_hint_to_request(RADIO, seed, pushed=2, horizon=30.0) < 8.0
               for seed in range(6))
    off = DEFAULT.with_(hint_settle=False)
    assert all(_hint_to_request(SCARCE, seed, pushed=2, policy=off, horizon=30.0) < 23.0
               for seed in range(6))


# a duty cycle that 100 posts of our own, pushed, keep more than half spent
TIGHT = Face.lora_radio("radio", profile("EU868.a"), duty_cycle=0.006)


def _no_echo_adverts(posts: int, seed: int, policy=DEFAULT) -> int:
    """A node that pushed ``posts`` of its own hears an entry of a feed it follows from
    its only neighbour, relays it, and nobody relays it on: how often in the next 2
    minutes its relays that nobody relayed on brought its WANT (``no_echo``). (The leaf
    rule, which would leave that relay out, is off here.)"""
    node = Node(MemoryStore(), policy=policy.with_(push_reserve=0.0, push_echo_skip=0.0),
                rng=random.Random(seed))
    node.add_face(TIGHT, 0.0)
    own, other = key(86), key(87)
    node.follow(other.fid, 0.0)
    (entry,) = build_feed(other, [b"news"])
    for i in range(posts):
        node.publish(own, f"post {i}".encode(), float(i))
    t = _send_until(node, 0.0, 900.0)
    before = node.stats.no_echo
    node.receive(t, "radio", add_crc(entry.packet), snr=5.0)
    _send_until(node, t, t + 120.0)
    return node.stats.no_echo - before


def test_while_airtime_is_scarce_relays_nobody_relayed_on_bring_no_want() -> None:
    # with airtime to spare, a relay nobody relayed on brings our WANT (four push windows
    # and a request delay later): it shows what we hold to a next hop that may have
    # missed it
    assert all(_no_echo_adverts(0, seed) == 1 for seed in range(4))
    # while more than half of the budget is spent, the neighbours mostly heard copies
    # enough and kept quiet: no WANT for that
    assert all(_no_echo_adverts(100, seed) == 0 for seed in range(4))
    eager = DEFAULT.with_(no_echo_scarce=True)
    assert all(_no_echo_adverts(100, seed, eager) >= 1 for seed in range(4))


def _orphan_to_request(face: Face, seed: int, *, adopted: bool, policy=DEFAULT,
                       horizon: float = 30.0) -> float:
    """A node whose radio pushed 12 posts of its own holds entries 1 and 2 of a feed it
    follows and hears a chunk of entry 3, which it cannot place yet (a hint: a neighbour
    holds something we lack); with ``adopted`` entry 3 itself comes by push a second
    later. How long until our WANT goes out (inf: not within ``horizon`` seconds)."""
    node, entries, t = _busy_follower(face, seed, policy, key(84), key(85),
                                      [b"one", b"two", b"z" * 300])
    heard = t
    assert node.receive(t, "radio", add_crc(entries[2].chunks[0]), snr=5.0).drop is Drop.NO_MATCH
    assert node.stats.hints == 1
    if adopted:
        node.receive(heard + 1.0, "radio", add_crc(entries[2].packet), snr=5.0)
        assert node.stats.orphans_adopted == 1
    return _first_want(node, t, heard, horizon)


def test_a_hint_from_a_frame_we_could_not_place_settles_once_it_is_stored() -> None:
    # the chunk came before its entry, and the entry came by push a second later: while
    # airtime is scarce, the request the chunk brought stays home
    assert all(_orphan_to_request(SCARCE, seed, adopted=True) == float("inf")
               for seed in range(6))
    # the entry did not come: we ask (request_delay_scarce, 15 s give or take half)
    assert all(_orphan_to_request(SCARCE, seed, adopted=False) < 23.0 for seed in range(6))
    # with airtime to spare, or without the rule, the request goes either way
    assert all(_orphan_to_request(RADIO, seed, adopted=True) < 8.0 for seed in range(6))
    off = DEFAULT.with_(hint_settle=False)
    assert all(_orphan_to_request(SCARCE, seed, adopted=True, policy=off) < 23.0
               for seed in range(6))


def _answer_spread(face: Face, posts: int) -> float:
    """A node that pushed ``posts`` posts of its own hears a neighbour's WANT (strong
    link) asking for them from the first: how many airtimes after it its last answer leaves."""
    node = Node(MemoryStore(), policy=DEFAULT, rng=random.Random(5))
    node.add_face(face, 0.0)
    k = key(84)
    for i in range(posts):
        node.publish(k, f"post {i}".encode(), float(i))
    t = _send_until(node, 0.0, 900.0)
    want = add_crc(encode_want(want_dmx(xor_keys([k.fid])), 0, [1]))
    assert node.receive(t, "radio", want, snr=5.0).answers == 5
    sent: list[float] = []
    heard, end = t, t + 300.0
    while t < end:
        sent += [t for out in node.frames_to_send(t) if out.kind is FrameKind.ENTRY]
        t = min(end, max(t + 0.01, node.next_deadline() or end))
    assert len(sent) == 5
    return (sent[-1] - heard) / face.airtime(120)


def test_answers_spread_out_while_airtime_is_scarce() -> None:
    # neighbours of an asker that cannot hear each other all answer its WANT: in bursts
    # they bury each other at the asker. Within answer_window (24 airtimes) with airtime
    # to spare, within answer_window_scarce (192) once more than half the budget is spent
    plenty = _answer_spread(RADIO, 10)
    # 30 pushes spend 7.2 s: more than half of this budget (10.8 s), with room left
    scarce = _answer_spread(Face.lora_radio("radio", profile("EU868.a"), duty_cycle=0.003),
                            30)
    # (give or take the queue and the listen-before-talk jitter: a few airtimes)
    assert plenty <= DEFAULT.answer_window + 8
    assert 2 * DEFAULT.answer_window < scarce <= DEFAULT.answer_window_scarce + 8


def _requests_while_keys_arrive(policy) -> list[float]:  # type: ignore[no-untyped-def]
    """A node hears a new feed key every 10 s for 4.5 min (nobody claims our set): when
    its WANT and CHNK go out, within 15 min."""
    node = Node(MemoryStore(), policy=policy, rng=random.Random(5))
    node.add_face(RADIO, 0.0)
    arrivals = [10.0 * i for i in range(28)]
    t, sent = 0.0, []
    while t < 900.0:
        while arrivals and arrivals[0] <= t:
            node.receive(arrivals.pop(0), "radio",
                         add_crc(Novelty(key(100 + len(arrivals)).fid).encode()))
        sent += [t for o in node.frames_to_send(t)
                 if o.kind in (FrameKind.WANT, FrameKind.CHNK)]
        t = min(arrivals[0] if arrivals else 900.0,
                max(t + 0.01, node.next_deadline() or t + 1.0))
    return sent


def test_no_request_goes_out_while_our_set_keeps_changing_and_nobody_holds_it() -> None:
    # each new key changes the DMX of WANT and CHNK: asked under a set nobody holds yet,
    # a request is not understood and stale at the next key. The node asks once its set
    # has stayed put (here: 15 s of silence count as agreement, _agreed)
    sent = _requests_while_keys_arrive(DEFAULT)
    assert sent and 270.0 < sent[0] < 270.0 + DEFAULT.request_settle
    # without the rule the requests went out between the keys
    eager = _requests_while_keys_arrive(DEFAULT.with_(request_settle=0.0))
    assert eager and eager[0] < 270.0


def test_a_node_with_no_key_says_so_with_an_empty_want() -> None:
    # a node that stays empty for goset_respond_holdoff sends the WANT of the empty set
    # from its request round (neighbours answer it with their claim), and again only
    # after the holdoff
    node = Node(MemoryStore(), policy=DEFAULT, rng=random.Random(6))
    node.add_face(RADIO, 0.0)
    hello = add_crc(encode_want(want_dmx(xor_keys([])), 0, []))
    t, sent = 0.0, []
    while t < 2 * DEFAULT.goset_respond_holdoff + 400.0:
        sent += [(t, o.frame) for o in node.frames_to_send(t)]
        deadline = node.next_deadline()
        assert deadline is not None  # it does not fall asleep waiting to be spoken to
        t = max(t + 0.01, deadline)
    times = [at for at, frame in sent if frame == hello]
    holdoff = DEFAULT.goset_respond_holdoff
    assert len(times) == 2 and holdoff <= times[0] < holdoff + DEFAULT.push_rtt_max
    assert times[1] - times[0] > DEFAULT.goset_respond_holdoff - 1.0  # (less tx jitter)
    assert all(frame == hello for _, frame in sent)


def _wants_at_the_duty_limit(policy, seed: int = 3) -> list[float]:
    """A node whose radio is kept at its duty-cycle limit by posts of its own (one every
    10 s, far more than a scarce budget carries), following another feed: when its WANTs
    went out in its second and third hour. (Its relays are dropped after 120 s, not the
    preset's 60: so they keep the budget spent between the floor rounds.)"""
    node = Node(MemoryStore(), policy=policy.with_(push_stale=120.0), rng=random.Random(seed))
    node.add_face(SCARCE, 0.0)
    own, other = key(88), key(89)
    node.follow(other.fid, 0.0)
    (entry,) = build_feed(other, [b"older"])
    node.receive(0.0, "radio", add_crc(entry.packet), snr=5.0)
    wants: list[float] = []
    t = 0.0
    for i in range(3 * 360):
        node.publish(own, f"post {i}".encode(), t)
        end = t + 10.0
        while t < end:
            for out in node.frames_to_send(t):
                if out.kind is FrameKind.WANT and t >= 3600.0:
                    wants.append(t)
            t = min(end, max(t + 0.01, node.next_deadline() or end))
        budget = node.airtime_budget("radio", t)
        assert budget is not None
        used, allowed, _ = budget
        assert t < 3600.0 or used > (1.0 - policy.push_reserve) * allowed  # at the limit
    return wants


def test_at_its_duty_limit_a_node_still_shows_what_it_lacks_every_beacon_floor() -> None:
    # relays take whatever airtime the budget frees; without the floor the node never
    # asks (the last fifth of the budget is kept for data); with it a WANT goes out every
    # 300 s, ahead of the relays waiting for airtime, while the budget frees any (here
    # the first quarter of each hour: the pushes of the first hour spent it all at once)
    assert _wants_at_the_duty_limit(DEFAULT.with_(beacon_floor=0.0)) == []
    wants = _wants_at_the_duty_limit(DEFAULT.with_(beacon_floor=300.0, beacon_floor_calm=0.0))
    assert len(wants) == 8, wants
    assert all(300.0 <= b - a for a, b in pairwise(wants)), wants


def test_once_its_set_stays_put_a_node_at_its_limit_asks_more_often() -> None:
    # the node's set (its own key and the one it follows) is complete from the start: once
    # it has stayed put for beacon_calm_after, a round may follow the last one after
    # beacon_floor_calm (where the budget carries it: here early in each hour)
    calm = DEFAULT.with_(beacon_floor=300.0, beacon_floor_calm=150.0, beacon_calm_after=3600.0)
    wants = _wants_at_the_duty_limit(calm)
    assert all(150.0 <= b - a for a, b in pairwise(wants)), wants
    assert wants and wants[1] - wants[0] < 200.0, wants
    # a set that changed too recently keeps the slower floor
    restless = calm.with_(beacon_calm_after=4 * 3600.0)
    assert _wants_at_the_duty_limit(restless) == _wants_at_the_duty_limit(
        calm.with_(beacon_floor_calm=0.0))


def _covered_after_hint(policy, hinted: int) -> bool:  # type: ignore[no-untyped-def]
    """A node following 100 feeds, holding the first entry of each, hears a neighbour's
    WANT showing that it holds two entries of the feed at set index ``hinted``: does the
    node's next WANT ask for that feed?"""
    node = Node(MemoryStore(), policy=policy, rng=random.Random(6))
    node.add_face(RADIO, 0.0)
    feeds = [key(200 + i) for i in range(100)]
    for k in feeds:
        node.follow(k.fid, 0.0)
    for k in feeds:
        (entry,) = build_feed(k, [b"first"])
        node.receive(0.0, "radio", add_crc(entry.packet), snr=5.0)
    t = _send_until(node, 0.0, 1200.0)  # the relays and the first rounds went out
    keys = node.goset.keys
    assert len(keys) == 100
    node.receive(t, "radio", add_crc(encode_want(want_dmx(xor_keys(keys)), hinted, [3])),
                 snr=5.0)
    end = t + 300.0
    while t < end:
        for out in node.frames_to_send(t):
            if out.kind is FrameKind.WANT:
                return hinted in {i for i, _ in decode_want(strip_crc(out.frame)).slots(100)}
        t = min(end, max(t + 0.01, node.next_deadline() or end))
    raise AssertionError("no WANT after the hint")


def test_a_want_after_a_hint_covers_the_feed_the_hint_showed_us_behind_on() -> None:
    # a WANT covers about half of a set of 100 keys; the next window in turn can cover
    # at most two of three feeds a third of the set apart, the window after a hint all
    assert all(_covered_after_hint(DEFAULT, i) for i in (0, 33, 66))
    plain = DEFAULT.with_(want_focus=False)
    assert not all(_covered_after_hint(plain, i) for i in (0, 33, 66))


class _LongFeeds(MemoryStore):
    """A store whose every feed is 300 entries long: a WANT slot takes 3 bytes, and a
    WANT covers only a third of a set of 100 keys."""

    def tops(self, fids):  # type: ignore[no-untyped-def]
        return [300 for _ in fids]


def test_hints_about_one_feed_do_not_leave_the_rest_of_the_set_unasked() -> None:
    keys = [i.to_bytes(32, "big") for i in range(1, 101)]
    builder, store = RequestBuilder(DEFAULT), _LongFeeds()
    windows = []
    for _ in range(6):  # every round, the hints still point at feed 10
        want = builder.want(want_dmx(xor_keys(keys)), keys, store, focus=[10])
        assert want is not None
        windows.append({i for i, _ in decode_want(want).slots(100)})
    assert len(windows[0]) < 40
    assert sum(10 in w for w in windows) >= 3  # every other WANT at least
    assert set().union(*windows) == set(range(100))  # and the whole set in turn


def _sent_once_the_budget_frees(policy) -> set[str]:  # type: ignore[no-untyped-def]
    """A node whose posts spent its whole budget at once hears a key new to it and an
    entry of a feed it follows: which of the two it relays by the time the budget frees."""
    node = Node(MemoryStore(), policy=policy, rng=random.Random(4))
    node.add_face(SCARCE, 0.0)
    own, other, new = key(93), key(94), key(95)
    node.follow(other.fid, 0.0)
    for i in range(40):
        node.publish(own, f"post {i}".encode(), 0.0)
    t = _send_until(node, 0.0, 30.0)
    used, allowed, _ = node.airtime_budget("radio", t) or (0.0, 0.0, 0.0)
    assert used > allowed - 0.5  # (the posts did spend it)
    (entry,) = build_feed(other, [b"hello"])
    heard = {add_crc(Novelty(new.fid).encode()): "novelty", add_crc(entry.packet): "entry"}
    for frame in heard:
        node.receive(t, "radio", frame, snr=5.0)
    sent: list[bytes] = []
    _send_until(node, t, 2 * SCARCE.duty_window, sent)
    return {heard[frame] for frame in sent if frame in heard}


def test_a_key_heard_while_the_budget_is_spent_is_passed_on_once_it_frees() -> None:
    # the entry's relay is long stale by then (its neighbours had it from others), the
    # novelty's is not: nobody may have told them the key, and a claim costs more
    assert _sent_once_the_budget_frees(DEFAULT) == {"novelty"}
    assert _sent_once_the_budget_frees(DEFAULT.with_(push_keep_novelties=False)) == set()


def _missing_keys_repair(policy) -> tuple[float, Counter[str]]:  # type: ignore[no-untyped-def]
    """b missed the novelties of two of a's 24 keys: how long until b holds them, and
    the GOSET frames a sent meanwhile (by type: claims whole or partial, novelties)."""
    mesh = radio_mesh(["a", "b"], policy)
    fids = [key(200 + i).fid for i in range(24)]
    lost = sorted(fids)[5], sorted(fids)[17]
    for fid in fids:
        mesh.nodes["a"].follow(fid, 0.0)
        if fid not in lost:
            mesh.nodes["b"].follow(fid, 0.0)
    mesh.run_for(60.0)  # the new keys' novelties go out while the two are apart
    mesh.link_all()
    sent: Counter[str] = Counter()

    def on_tx(_t: float, src: str, out: Outgoing) -> None:
        if src == "a" and out.kind in (FrameKind.CLAIM, FrameKind.NOVELTY):
            packet = decode_goset(strip_crc(out.frame))
            whole = isinstance(packet, Claim) and packet.cnt == len(fids)
            sent["full claim" if whole else type(packet).__name__.lower()] += 1

    mesh.on_tx = on_tx
    took = mesh.run_until(lambda: all(f in mesh.nodes["b"].goset for f in lost), limit=3600)
    return took, sent


def test_a_neighbour_that_lacks_two_keys_gets_them_as_novelties_named_by_the_xor() -> None:
    took, sent = _missing_keys_repair(DEFAULT)
    assert sent["novelty"] == 2 and sent["claim"] == 0
    # the binary search it replaces: half claims, one more round trip per halving
    took_halving, halving = _missing_keys_repair(DEFAULT.with_(goset_xor_help=False))
    assert halving["claim"] >= 2
    assert took < took_halving
