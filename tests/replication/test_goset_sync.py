"""GOSET rounds: timing, suppression, pending claims, the key cap."""

from __future__ import annotations

import itertools
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.replication.goset import GosetSync
from gateway.replication.policy import DEFAULT, REFERENCE
from gateway.wire.goset import (
    MAX_KEYS,
    ZERO_KEY,
    Claim,
    Novelty,
    Zap,
    decode_goset,
    make_claim,
)


def key(i: int) -> bytes:
    return i.to_bytes(32, "big")


def sync(policy=REFERENCE, n: int = 0) -> GosetSync:  # type: ignore[no-untyped-def]
    g = GosetSync(policy, random.Random(3))
    for i in range(1, n + 1):
        g.add(key(i * 10), 0.0)
    return g


def run(g: GosetSync, until: float) -> list[tuple[float, object]]:
    """(time, decoded packet) of everything the GOSET sends until ``until``."""
    out = []
    while (t := g.deadline()) is not None and t <= until:
        out += [(t, decode_goset(o.packet)) for o in g.on_timer(t)]
    return out


def test_reference_rounds_every_15_to_16_seconds_with_a_full_claim() -> None:
    g = sync(REFERENCE, 3)
    sent = run(g, 100.0)
    times = [t for t, _ in sent]
    assert times[0] == 0.0
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert len(times) >= 6 and all(15.0 <= d <= 16.0 for d in gaps)
    full = make_claim(g.keys, 0, 2)
    assert all(p == full for _, p in sent)


def test_trickle_backs_off_while_neighbours_agree_and_suppresses_our_claim() -> None:
    g = sync(DEFAULT, 3)
    full = g.full_claim()
    assert full is not None
    quiet = run(g, 2000.0)  # nobody disagrees: intervals double up to the maximum
    times = sorted({t for t, _ in quiet})
    assert len(times) < 14
    assert times[-1] - times[-2] > 100
    # a neighbour says the same thing in every interval: we stay silent
    heard = []
    t = 2000.0
    while t < 4000.0:
        g.on_packet(full, "radio", t)
        nxt = g.deadline()
        assert nxt is not None
        heard += g.on_timer(nxt)
        t = nxt
    assert heard == [] and g.claims_suppressed > 0


def test_a_new_key_resets_trickle_and_is_announced_by_novelty() -> None:
    # the GOSET's own announcement (the ip preset's): without push, a new key restarts
    # Trickle and goes out as a novelty in the next round
    policy = DEFAULT.with_(novelties=True, goset_reset_on_add=True, push=False)
    g = sync(policy, 2)
    run(g, 3000.0)
    assert g.add(key(99), 3000.0)
    sent = run(g, 3000.0 + policy.goset_interval_min)
    assert Novelty(key(99)) in [p for _, p in sent]
    assert any(isinstance(p, Claim) and p.cnt == 3 for _, p in sent)


def test_under_push_a_new_key_leaves_trickle_quiet() -> None:
    # the default preset: the Node pushes the new key's novelty at once (test_push.py);
    # the claims keep their long quiet interval instead of restarting at the minimum
    g = sync(DEFAULT, 2)
    run(g, 3000.0)
    assert g.add(key(99), 3000.0)
    sent = run(g, 3000.0 + 4 * DEFAULT.goset_interval_min)
    assert sent == []


def test_missing_middle_key_is_taken_directly_from_a_three_key_claim() -> None:
    g = sync(REFERENCE, 2)  # keys 10 and 20
    middle = key(15)
    c = Claim(key(10), key(20), bytes(a ^ b ^ m for a, b, m in zip(key(10), key(20), middle)), 3)
    g.on_packet(c, "radio", 1.0)
    assert middle in g and g.pending_count == 0


def test_help_splits_a_long_inner_range_into_two_half_claims() -> None:
    g = sync(REFERENCE, 8)  # we hold 8 keys, the peer only the two ends
    ends = [g.keys[0], g.keys[7]]
    peer = make_claim(ends, 0, 1)
    g.on_packet(peer, "radio", 0.5)
    answers = [o for o in g.on_timer(0.5) if o.faces]  # the full claim goes everywhere
    packets = [decode_goset(o.packet) for o in answers]
    assert packets == [make_claim(g.keys, 1, 3), make_claim(g.keys, 4, 6)]
    assert all(o.faces == {"radio"} for o in answers)
    assert g.pending_count == 0


def test_pending_claims_are_trimmed_and_expire() -> None:
    g = sync(DEFAULT, 0)
    for i in range(40):
        lo, hi = key(1000 + 2 * i), key(1001 + 2 * i)
        g.on_packet(Claim(lo, hi, key(7 + i), 5 + i), "radio", 0.0)
    assert g.pending_count == DEFAULT.pending_max
    for r in range(DEFAULT.pending_rounds + 1):
        t = g.deadline()
        assert t is not None
        g.on_timer(t)
        g.on_timer(g.deadline() or t)
    assert g.pending_count < DEFAULT.pending_max


def test_the_set_stops_at_100_keys_and_ignores_zero_keys() -> None:
    g = sync(REFERENCE, 0)
    assert not g.add(ZERO_KEY, 0.0)
    for i in range(1, 150):
        g.add(key(i), 0.0)
    assert len(g) == MAX_KEYS and g.refused_full == 49
    g.on_packet(Claim(ZERO_KEY, key(5), key(5), 2), "radio", 1.0)
    assert g.pending_count == 0


def test_zaps_are_counted_never_repeated() -> None:
    g = sync(REFERENCE, 2)
    g.on_packet(decode_goset(bytes.fromhex("613dfa70c47aba7a") + bytes(32) + bytes(3)
                             + (-1).to_bytes(4, "big", signed=True)), "radio", 0.0)
    assert g.zaps_dropped == 1
    sent = [p for _, p in run(g, 60.0)]
    assert sent and not any(isinstance(p, Zap) for p in sent)


def test_a_response_due_while_keys_arrive_goes_out_once_they_stop_not_after_the_holdoff() -> None:
    # a neighbour claims keys 10..30 with two we lack in between: we owe it our claim of
    # that range (an ask). A key of ours arrives just before the response falls due: the
    # response waits until keys have stopped arriving for goset_respond_delay, and then
    # goes out (it used to be dropped, and the next one came after the 600 s holdoff)
    g = sync(DEFAULT, 3)  # keys 10, 20, 30
    run(g, 3000.0)
    theirs = [key(10), key(15), key(20), key(25), key(30)]
    g.on_packet(make_claim(theirs, 0, 4), "radio", 3000.0)
    assert g.add(key(99), 3001.0)
    sent = run(g, 3000.0 + DEFAULT.goset_respond_holdoff / 2)
    ask = make_claim([key(10), key(20), key(30)], 0, 2)
    times = [t for t, p in sent if p == ask]
    assert times and 3001.0 + DEFAULT.goset_respond_delay <= times[0] < 3030.0


def test_a_response_to_a_node_with_no_key_is_not_suppressed_by_equal_claims() -> None:
    # neighbours said the same as we would in this interval (Trickle's suppression); a
    # node that holds no key did not hear them: our response round claims anyway
    for insist, claims in ((False, 0), (True, 1)):
        g = sync(DEFAULT, 3)
        run(g, 3000.0)
        full = g.full_claim()
        g.on_packet(full, "radio", 3000.0)  # an equal claim: ours is suppressed
        g.respond_soon(3001.0, claim=True, insist=insist)
        sent = run(g, 3001.0 + DEFAULT.goset_respond_delay)
        assert [p for _, p in sent].count(full) == claims


def _asks_to_a_neighbour_that_stays_different(g: GosetSync, start: float, until: float,
                                              add_at: float | None = None) -> list[float]:
    """A neighbour claims keys 10..30 with two we lack in between, and claims it again
    after every ask of ours without ever helping: when our asks went out."""
    theirs = make_claim([key(10), key(15), key(20), key(25), key(30)], 0, 4)
    ask_range = (key(10), key(30))
    g.on_packet(theirs, "radio", start)
    times: list[float] = []
    while (t := g.deadline()) is not None and t <= until:
        if add_at is not None and t >= add_at:
            assert g.add(key(99), add_at)  # a key of somebody else's arrives
            add_at = None
            continue
        for out in g.on_timer(t):
            p = decode_goset(out.packet)
            if isinstance(p, Claim) and (p.lo, p.hi) == ask_range and p.cnt == 3:
                times.append(t)
                g.on_packet(theirs, "radio", t + 1.0)
    return times


def test_answers_to_a_difference_that_lasts_back_off_while_airtime_is_scarce() -> None:
    """city-100's pocket nodes answered a neighbour whose set stayed different every
    8-15 s and spent half their hour on claims; with goset_respond_backoff each answer
    waits twice as long as the last (up to goset_respond_holdoff) while the radio is
    short of airtime, and a key added starts it over."""
    assert DEFAULT.goset_respond_backoff

    def scarce_sync(scarce: bool) -> GosetSync:
        g = GosetSync(DEFAULT, random.Random(3), scarce=lambda _now: scarce)
        for i in (10, 20, 30):
            g.add(key(i), 0.0)
        run(g, 3000.0)
        return g

    for plain in (scarce_sync(False), sync(DEFAULT.with_(goset_respond_backoff=False), 3)):
        run(plain, 3000.0)
        steady = _asks_to_a_neighbour_that_stays_different(plain, 3000.0, 4000.0)
        assert len(steady) > 50  # one every 2 x goset_interval_min .. goset_respond_delay

    backing = _asks_to_a_neighbour_that_stays_different(scarce_sync(True), 3000.0, 4000.0)
    gaps = [b - a for a, b in itertools.pairwise(backing)]
    assert 5 <= len(backing) <= 12  # (the Trickle rounds ask too)
    # the first wait is the response delay (up to goset_respond_delay); then 16, 32, 64 s
    assert all(b >= 1.9 * a for a, b in itertools.pairwise(gaps[1:4]))

    renewed = _asks_to_a_neighbour_that_stays_different(scarce_sync(True), 3000.0, 5000.0,
                                                        add_at=4000.0)
    after = [t for t in renewed if t > 4000.0]
    assert len(after) >= 3
    assert after[1] - after[0] <= 2 * DEFAULT.goset_interval_min + DEFAULT.goset_respond_delay


XOR_HELP = REFERENCE.with_(goset_xor_help=True)


def _helped(policy, ours: list[bytes], theirs: list[bytes]) -> list[object]:  # type: ignore[no-untyped-def]
    """What a GOSET holding ``ours`` sends to the face of a peer that claimed ``theirs``
    (over the same two end keys), apart from its own full claim."""
    g = GosetSync(policy, random.Random(3))
    for k in ours:
        g.add(k, 0.0, force=True)
    g.on_packet(make_claim(sorted(theirs), 0, len(theirs) - 1), "radio", 0.5)
    return [decode_goset(o.packet) for o in g.on_timer(0.5) if o.faces]


@settings(max_examples=80, deadline=None)
@given(n=st.integers(3, MAX_KEYS), lacking=st.integers(1, 3), seed=st.integers(0, 2**32))
def test_a_peer_lacking_one_to_three_of_our_keys_gets_just_those_as_novelties(
        n: int, lacking: int, seed: int) -> None:
    rng = random.Random(seed)
    ours = sorted(rng.randbytes(32) for _ in range(n))
    inner = ours[1:-1]
    if len(inner) < lacking:
        return
    gone = rng.sample(inner, lacking)
    theirs = [k for k in ours if k not in gone]
    sent = _helped(XOR_HELP, ours, theirs)
    assert sorted(sent, key=lambda p: p.key) == [Novelty(k) for k in sorted(gone)]  # type: ignore[attr-defined]


def test_without_the_xor_rule_a_missing_key_costs_two_half_claims() -> None:
    ours = [key(i * 10) for i in range(1, 21)]
    theirs = [k for k in ours if k != key(70)]
    sent = _helped(REFERENCE, ours, theirs)
    assert sent == [make_claim(ours, 1, 9), make_claim(ours, 10, 18)]


def test_a_peer_that_also_holds_keys_we_lack_or_lacks_four_gets_half_claims() -> None:
    ours = [key(i * 10) for i in range(1, 21)]
    halves = [make_claim(ours, 1, 9), make_claim(ours, 10, 18)]
    # it lacks two of ours and holds one of its own: no pair of ours explains the XOR
    theirs = [k for k in ours if k not in (key(70), key(120))] + [key(55)]
    assert _helped(XOR_HELP, ours, theirs) == halves
    # four lacking: more than the rule looks for (XOR_HELP_MAX)
    theirs = [k for k in ours if k not in (key(30), key(70), key(120), key(150))]
    assert _helped(XOR_HELP, ours, theirs) == halves
