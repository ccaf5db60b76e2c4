"""Converging with a peer whose GOSET falls silent (issue 15, item 1).

The Python reference's GOSET task dies when its help path shrinks to one key (it calls
a removed novelty helper, wire-compat.md section 8): after its full claim and one help
claim it never claims again, and its WANT/CHNK DMX stay at the XOR of its whole set. We
must take the last key from what we heard: a claim whose range holds exactly one key
fewer at our side than its count names it as the claim's XOR xor ours in that range.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.replication import REFERENCE, Face, FaceKind, FrameKind, Node
from gateway.replication.goset import GosetSync
from gateway.replication.policy import DEFAULT, IP, Policy
from gateway.store.memory import MemoryStore
from gateway.wire.entry import FeedKey
from gateway.wire.goset import Claim, Novelty, decode_goset, make_claim, plausible_key, want_dmx
from gateway.wire.want import encode_want

POOL = sorted(FeedKey.from_seed(bytes([0x15, i]) + bytes(30)).fid for i in range(48))


def xor(*keys: bytes) -> bytes:
    acc = 0
    for k in keys:
        acc ^= int.from_bytes(k, "big")
    return acc.to_bytes(32, "big")


def claim_over(keys: list[bytes]) -> bytes:
    return make_claim(keys, 0, len(keys) - 1).encode()


@pytest.mark.parametrize("policy", [REFERENCE, IP, DEFAULT], ids=lambda p: p.name)
def test_full_claim_and_one_sub_claim_then_silence_is_enough(policy: Policy) -> None:
    peer = POOL[:5]
    node = Node(MemoryStore(), policy=policy, rng=random.Random(1))
    node.add_face(Face("ws", kind=FaceKind.POINT_TO_POINT), 0.0)
    # what the Python reference sends before its GOSET task dies: its full claim, then
    # (after our ask) the help for the inner range k1..k3, then nothing ever again
    node.receive(1.0, "ws", claim_over(peer))
    node.receive(17.0, "ws", claim_over(peer[1:4]))
    assert node.goset.keys == peer
    assert node.goset.derived == 1
    # its requests (under the XOR of its 5 keys) are ours now, and ours are its
    report = node.receive(18.0, "ws", encode_want(want_dmx(xor(*peer)), 0, [1] * 5))
    assert report.kind is FrameKind.WANT and report.drop is None
    sent = []
    for t in (20.0, 40.0, 80.0, 200.0):
        sent += [o.frame for o in node.frames_to_send(t)]
    assert any(f[:7] == want_dmx(xor(*peer)) for f in sent)


def test_a_key_we_hold_that_the_peer_lacks_blocks_the_guess() -> None:
    """The rule needs our keys in the range to be the peer's: with one of our own in the
    range, XOR-ing would name a key nobody has, which a grow-only set could never shed.
    Search keys so that the wrong guess would even look like a feed id inside the range."""
    lo, hi = POOL[0], POOL[-1]
    found = None
    for i in range(4000):
        own = FeedKey.from_seed(b"own" + i.to_bytes(29, "big")).fid
        a, b = POOL[10], POOL[20]  # the peer holds a and b, we hold own instead
        guess = xor(lo, hi, a, b, lo, hi, own)  # claim xor ^ xor of ours in the range
        if lo < own < hi and lo < guess < hi and plausible_key(guess):
            found = own
            break
    assert found is not None
    g = GosetSync(IP, random.Random(2))
    g.add(found, 0.0, force=True)  # our own feed: no face showed it
    g.on_packet(Claim(lo, hi, xor(lo, hi, POOL[10], POOL[20]), 4), "ws", 1.0, one_peer=True)
    assert sorted(g.keys) == sorted([lo, hi, found]) and g.derived == 0
    assert g.pending_count == 1  # asked about in the next round instead


def test_keys_shown_on_another_face_do_not_vouch() -> None:
    g = GosetSync(REFERENCE, random.Random(3))
    g.on_packet(Novelty(POOL[1]), "a", 0.0, one_peer=True)
    g.on_packet(Novelty(POOL[2]), "b", 0.0, one_peer=True)
    g.on_packet(Claim(POOL[0], POOL[4], xor(*POOL[:5]), 5), "a", 1.0, one_peer=True)
    assert g.derived == 0 and POOL[3] not in g
    # a showing after the claim is no evidence of the set the claim was made over
    g.on_packet(Novelty(POOL[2]), "a", 2.0, one_peer=True)
    assert g.derived == 0 and POOL[3] not in g
    # the same claim heard again now: face a held k1 and k2 when it made it
    g.on_packet(Claim(POOL[0], POOL[4], xor(*POOL[:5]), 5), "a", 3.0, one_peer=True)
    assert g.keys == POOL[:5] and g.derived == 1


def test_a_broadcast_face_mixes_senders_so_only_the_three_key_rule_applies() -> None:
    node = Node(MemoryStore(), policy=REFERENCE, rng=random.Random(1))
    node.add_face(Face("radio"), 0.0)
    node.receive(1.0, "radio", claim_over(POOL[:5]))
    node.receive(2.0, "radio", claim_over(POOL[1:4]))
    assert len(node.goset) == 4 and node.goset.derived == 0
    node.receive(3.0, "radio", claim_over(POOL[1:4]))  # k1, k3 adjacent now: k2
    assert node.goset.keys == POOL[:5]


def test_help_claims_give_their_missing_keys_and_a_repeated_full_claim_the_last() -> None:
    peer = POOL[:9]
    g = GosetSync(REFERENCE, random.Random(4))
    g.on_packet(decode_goset(claim_over(peer)), "ws", 0.0, one_peer=True)  # k0, k8
    g.on_packet(decode_goset(claim_over(peer[1:4])), "ws", 1.0, one_peer=True)  # k1 k3: k2
    g.on_packet(decode_goset(claim_over(peer[5:8])), "ws", 1.0, one_peer=True)  # k5 k7: k6
    assert g.derived == 2 and peer[4] not in g  # the full claim came before k1..k7 did
    g.on_packet(decode_goset(claim_over(peer)), "ws", 15.0, one_peer=True)  # its next round
    assert g.keys == peer and g.derived == 3


class _DyingPeer:
    """A reference GOSET whose task dies the moment its help would send a novelty (the
    Python reference's failure): nothing goes out from then on."""

    def __init__(self, keys: list[bytes]) -> None:
        self.g = GosetSync(REFERENCE, random.Random(5))
        for k in keys:
            self.g.add(k, 0.0, force=True)
        self.dead = False
        self.helped = 0

    def on_timer(self, now: float) -> list[bytes]:
        if self.dead:
            return []
        out = []
        for o in self.g.on_timer(now):
            if isinstance(decode_goset(o.packet), Novelty):
                self.dead = True
                break
            self.helped += bool(o.faces)
            out.append(o.packet)
        return out


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 48), seed=st.integers(0, 2**16),
       policy=st.sampled_from([REFERENCE, IP, DEFAULT]))
def test_we_learn_the_whole_set_of_a_peer_that_dies_helping(n: int, seed: int,
                                                            policy: Policy) -> None:
    """Whatever the size of the peer's set, its claims before its help would need a
    novelty are enough, and no key outside its set ever enters ours."""
    peer_keys = sorted(random.Random(seed).sample(POOL, n))
    peer = _DyingPeer(peer_keys)
    ours = GosetSync(policy, random.Random(seed))
    now, steps = 0.0, 0
    while ours.keys != peer_keys and now < 3600.0 and steps < 2000:
        steps += 1
        times = [t for t in (peer.g.deadline(), ours.deadline()) if t is not None]
        now = max(now, min(times))
        for pkt in peer.on_timer(now):
            ours.on_packet(decode_goset(pkt), "ws", now, one_peer=True)
        for o in ours.on_timer(now):
            peer.g.on_packet(decode_goset(o.packet), "ws", now, one_peer=True)
        assert set(ours.keys) <= set(peer_keys)
    assert ours.keys == peer_keys
    assert not peer.dead  # it never had to help with a single key
