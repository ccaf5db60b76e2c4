"""GOSET synchronisation: the grow-only set of feed ids, claims, novelties and rounds.

Behaviour follows wire-compat.md section 3, which is what the Python, ESP32 and Android
references do:

* a novelty adds its key; a claim equal to our whole set means we agree; a claim of
  three keys whose ends sit next to each other in our set gives the missing middle key
  (``xor ^ lo ^ hi``) directly; any other claim adds its two end keys and waits as a
  *pending* claim (deduplicated on ``(cnt, xor)``) for the next round;
* generalising the middle-key rule (the Python reference's GOSET task dies when its
  help shrinks to one key, so it never claims again, issue 15): whenever a pending
  claim's range holds exactly one key fewer at our side than its count, the missing key
  is the claim's XOR xor ours over that range. It is taken only if it sorts strictly
  inside the range, is new, could be a feed id (an Ed25519 point), and every key we
  hold in the range was shown to us by the claim's sender *before* that claim (a
  novelty, a claim end, a claim equal to our set; the set only grows, so it held them
  still): a key the peer lacks would make the "missing" key garbage, which a grow-only
  set never sheds. Only a point-to-point face tells one sender apart, so the rule
  applies there; on a broadcast face only the three-key rule does;
* each round sends one queued novelty (when enabled), our full claim, then walks the
  pending claims smallest first: where we hold fewer keys in that range we *ask* with
  our partial claim, where we hold more we *help* by sending the inner range (ends
  stripped, the peer has them) as a novelty, one claim or two half claims — or, with
  ``goset_xor_help`` (not a reference behaviour, but only frames they take), where the
  peer lacks 1 to :data:`XOR_HELP_MAX` of our keys and nothing else, just those keys as
  novelties: the XOR of our claim over the range and the peer's names them (at most
  about 5,000 look-ups for three among 100 keys, per help);
* zero keys are ignored, the set stops at 100 keys, zaps are never sent.

The round timer is either a fixed period plus jitter (the references) or a Trickle
timer (RFC 6206), chosen by the :class:`~gateway.replication.policy.Policy`.
"""

from __future__ import annotations

import bisect
import logging
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ..wire.goset import (
    MAX_KEYS,
    ZERO_KEY,
    Claim,
    Novelty,
    Zap,
    make_claim,
    plausible_key,
)
from .policy import Policy

__all__ = ["XOR_HELP_MAX", "GosetOut", "GosetSync"]

XOR_HELP_MAX = 3  # keys a peer may lack for the XOR of two claims to name them (goset_xor_help)

log = logging.getLogger(__name__)


@dataclass(slots=True, frozen=True)
class GosetOut:
    """A GOSET packet to send: on every face (``faces`` empty) or on the named ones.

    ``full`` marks our claim over the whole set: a newer one replaces it in a queue.
    """

    packet: bytes
    faces: frozenset[str] = frozenset()
    full: bool = False


@dataclass(slots=True)
class _Pending:
    claim: Claim
    faces: dict[str, int] = field(default_factory=dict)  # face -> when last heard (tick)
    rounds: int = 0


class GosetSync:
    """The set of keys we replicate plus the claim/novelty protocol around it."""

    def __init__(self, policy: Policy, rng: random.Random,
                 accept: Callable[[bytes], bool] = lambda _k: True,
                 admit: Callable[[bytes, str | None, float], bool] | None = None,
                 scarce: Callable[[float], bool] = lambda _now: False) -> None:
        self.policy = policy
        self._rng = rng
        self._accept = accept
        self._admit = admit  # (key, face that named it, now): see .admission
        self._scarce = scarce  # (now): is a radio short of airtime? (goset_respond_backoff)
        self._face: str | None = None  # the face of the packet being handled
        self.keys: list[bytes] = []  # sorted as unsigned byte strings
        self._index: dict[bytes, int] = {}
        self._state = 0  # XOR of all keys, as an int
        # ... and as 32 bytes (``state``: asked for every GOSET packet a Node hears)
        self._state_bytes = bytes(32)
        self._pending: dict[tuple[int, bytes], _Pending] = {}
        # bumped whenever a key joins or leaves the set, a claim becomes pending, a
        # pending claim is heard on another face or a face first shows keys: the
        # derivation rule (run after every GOSET packet heard) can only find something
        # new after such a change, so a pass that found no pending claim with a one-key
        # gap and a face that could vouch for it records this (``_underived``) and the
        # next passes are skipped until the next change
        self._changes = 0
        self._underived = -1
        self._novelty_queue: list[bytes] = []
        self.largest_cnt_seen = 0
        self.added: list[bytes] = []  # keys added since the owner last drained this
        # point-to-point face -> key -> when (tick) that face first showed it holds the
        # key (novelty, claim end, claim equal to our set, derived from its claim): the
        # evidence the derivation rule needs
        self._shown: dict[str, dict[bytes, int]] = {}
        self._tick = 0  # counts GOSET packets received: orders showing and claiming
        # round timer
        self._interval = policy.goset_interval_min
        self._interval_end: float | None = None  # None: not started yet
        self._next_round = 0.0
        self._round_done = False
        self._heard_consistent = 0
        # without Trickle resets on claims: an extra round soon after a difference shows
        # (a claim unlike ours, a request under a GOSET not ours), at most one per
        # ``goset_respond_holdoff``
        self._respond_at: float | None = None
        self._respond_claim = False  # the response includes our full claim
        self._respond_insist = False  # ... even if neighbours said the same (a new node)
        self._added_at = float("-inf")  # when the set last grew
        self._respond_ok = float("-inf")  # no response round before this time
        # wait after a response round that sent something (goset_respond_backoff), when
        # the last one did, and when the pending response was asked for
        self._respond_gap = self._first_gap
        self._respond_sent_at: float | None = None
        self._respond_want = float("-inf")
        # counters
        self.rounds = 0
        self.claims_suppressed = 0
        self.zaps_dropped = 0
        self.refused_full = 0  # keys turned away because the set holds 100 already
        self.derived = 0  # keys taken as a claim's XOR xor ours (one missing in its range)

    # --- the set ----------------------------------------------------------------------
    @property
    def state(self) -> bytes:
        """XOR of all keys (32 zero bytes for an empty set)."""
        return self._state_bytes

    def __len__(self) -> int:
        return len(self.keys)

    def __contains__(self, key: bytes) -> bool:
        return key in self._index

    def index(self, key: bytes) -> int | None:
        return self._index.get(key)

    def add(self, key: bytes, now: float, *, force: bool = False, announce: bool = True) -> bool:
        """Add ``key`` unless it is zero, known, refused by policy or the set is full.

        ``force`` skips the policy check (our own feeds, feeds followed by hand);
        ``announce=False`` queues no novelty (feeds loaded from the store at start).
        """
        key = bytes(key)
        if len(key) != 32 or key == ZERO_KEY or key in self._index:
            return False
        if len(self.keys) >= MAX_KEYS:
            self.refused_full += 1
            if self.refused_full == 1:
                log.warning("GOSET is full (%d keys, the limit of every implementation): "
                            "feed %s and later ones are not replicated; an allow-list policy "
                            "chooses which feeds to keep", MAX_KEYS, key.hex()[:16])
            return False
        if not force and not (self._accept(key) if self._admit is None
                              else self._admit(key, self._face, now)):
            return False
        pos = bisect.bisect_left(self.keys, key)
        self.keys.insert(pos, key)
        self._changes += 1
        self._index = {k: i for i, k in enumerate(self.keys)}
        self._state ^= int.from_bytes(key, "big")
        self._state_bytes = self._state.to_bytes(32, "big")
        self._added_at = now
        self._progress()
        self.added.append(key)
        if self.policy.novelties and announce:
            self._novelty_queue.append(key)
        if self.policy.goset_reset_on_add or self._interval_end is None:
            self._inconsistent(now)
        log.debug("GOSET: added %s (now %d keys)", key.hex()[:16], len(self.keys))
        return True

    def full_claim(self) -> Claim | None:
        """The claim over the whole set (its XOR is the running state: no recount)."""
        if not self.keys:
            return None
        return Claim(self.keys[0], self.keys[-1], self.state, len(self.keys))

    def forget_face(self, face: str) -> None:
        """The face is gone: what it showed us is no evidence any more."""
        self._shown.pop(face, None)

    # --- receiving ------------------------------------------------------------------
    def remove(self, key: bytes, now: float) -> bool:
        """Take ``key`` out of the set again (a key that never proved itself, see
        :mod:`.admission`); False if it is not in the set."""
        pos = self._index.get(key)
        if pos is None:
            return False
        del self.keys[pos]
        self._changes += 1
        self._index = {k: i for i, k in enumerate(self.keys)}
        self._state ^= int.from_bytes(key, "big")
        self._state_bytes = self._state.to_bytes(32, "big")
        if key in self._novelty_queue:
            self._novelty_queue.remove(key)
        self._inconsistent(now)
        return True

    def on_packet(self, pkt: Claim | Novelty | Zap, face: str, now: float, *,
                  one_peer: bool = False) -> None:
        """Handle a GOSET packet heard on ``face``; ``one_peer``: the face is a
        point-to-point link, so what it shows is one peer's set."""
        self._face = face  # keys it brings are admitted per face (see .admission)
        try:
            self._on_packet(pkt, face, now, one_peer)
        finally:
            self._face = None

    def _on_packet(self, pkt: Claim | Novelty | Zap, face: str, now: float,
                   one_peer: bool) -> None:
        self._tick += 1
        if isinstance(pkt, Novelty):
            self.add(pkt.key, now)
            if one_peer:
                self._show(face, (pkt.key,))
        elif isinstance(pkt, Claim):
            self._on_claim(pkt, face, now, one_peer)
        else:
            self.zaps_dropped += 1  # an ESP32 wipe command: never obeyed, never repeated
            return
        if self._pending:
            self._derive_missing(now)

    def _show(self, face: str, keys: Iterable[bytes]) -> None:
        shown = self._shown.get(face)
        if shown is None:
            shown = self._shown[face] = {}
            self._changes += 1
        for k in keys:
            if k in self._index:
                shown.setdefault(k, self._tick)

    def _on_claim(self, c: Claim, face: str, now: float, one_peer: bool = False) -> None:
        if c.cnt == 0 or c.lo == ZERO_KEY or c.hi == ZERO_KEY:
            return
        self.largest_cnt_seen = max(self.largest_cnt_seen, c.cnt)
        if c.cnt == len(self.keys) and c.xor == self.state:
            self._heard_consistent += 1
            self._progress()
            self._novelty_queue.clear()  # they hold every key we could announce
            if one_peer:
                self._show(face, self.keys)
            return
        lo_i, hi_i = self._index.get(c.lo), self._index.get(c.hi)
        if c.cnt == 3 and lo_i is not None and hi_i is not None and hi_i == lo_i + 1:
            middle = (int.from_bytes(c.xor, "big") ^ int.from_bytes(c.lo, "big")
                      ^ int.from_bytes(c.hi, "big")).to_bytes(32, "big")
            self.add(middle, now)
            return
        self.add(c.lo, now)
        self.add(c.hi, now)
        if one_peer:
            self._show(face, (c.lo, c.hi))
        key = (c.cnt, c.xor)
        pend = self._pending.get(key)
        if pend is None:
            self._pending[key] = pend = _Pending(c)
            self._changes += 1
            self._trim_pending()
        if face not in pend.faces:
            self._changes += 1
        pend.faces[face] = self._tick
        if self.policy.goset_reset_on_claim:
            self._inconsistent(now)
        else:
            self.respond_soon(now)

    def _derive_missing(self, now: float) -> None:
        """Take the one key a pending claim's range lacks at our side (XOR of the claim
        xor ours there), again while that completes further claims; see the module notes
        for the checks. Never waits for the peer to claim again."""
        if self._underived == self._changes:
            return  # the last pass found no one-key gap, and nothing changed since
        shown = self._shown
        progress = True
        while progress:
            progress = False
            gaps = False  # a pending claim's range lacks one key at our side
            for pkey, pend in list(self._pending.items()):
                c = pend.claim
                lo_i, hi_i = self._index.get(c.lo), self._index.get(c.hi)
                if lo_i is None or hi_i is None or hi_i < lo_i or hi_i - lo_i + 2 != c.cnt:
                    continue
                if shown.keys().isdisjoint(pend.faces):
                    continue  # no face that heard it showed anything: none can vouch
                gaps = True
                ours = make_claim(self.keys, lo_i, hi_i)
                missing = (int.from_bytes(c.xor, "big")
                           ^ int.from_bytes(ours.xor, "big")).to_bytes(32, "big")
                if not c.lo < missing < c.hi or missing in self._index:
                    continue
                vouching = [f for f, heard in pend.faces.items()
                            if self._shown_by(f, self.keys[lo_i:hi_i + 1], heard)]
                if not vouching or not plausible_key(missing) or not self.add(missing, now):
                    continue
                self.derived += 1
                for f in vouching:
                    self._shown[f].setdefault(missing, pend.faces[f])
                del self._pending[pkey]
                log.info("GOSET: derived key %s from a claim of %d keys (we held %d of "
                         "them)", missing.hex()[:16], c.cnt, c.cnt - 1)
                progress = True
            if not gaps:
                self._underived = self._changes

    def _shown_by(self, face: str, keys: Iterable[bytes], before: int) -> bool:
        """Did ``face`` show it holds every one of ``keys`` by tick ``before``?"""
        shown = self._shown.get(face)
        return shown is not None and all(shown.get(k, before + 1) <= before for k in keys)

    def _trim_pending(self) -> None:
        if len(self._pending) > self.policy.pending_max:
            ordered = sorted(self._pending.items(), key=lambda kv: kv[0][0])
            self._pending = dict(ordered[: self.policy.pending_max])

    # --- the round timer -------------------------------------------------------------
    def new_neighbour(self, now: float) -> None:
        """A face opened (a peer connected): under Trickle, claim again soon rather than
        at the end of a long quiet interval (RFC 6206 lets new neighbours reset it)."""
        if self._interval_end is not None:
            self._inconsistent(now)

    def _inconsistent(self, now: float) -> None:
        """Something differs between us and a neighbour: talk again soon (Trickle reset)."""
        if self._interval_end is None:
            self._start_interval(now)  # the first key: rounds begin
        elif self.policy.trickle and self._interval > self.policy.goset_interval_min:
            self._interval = self.policy.goset_interval_min
            self._start_interval(now)

    def _start_interval(self, now: float) -> None:
        p = self.policy
        self._heard_consistent = 0
        self._round_done = False
        if p.trickle:
            self._interval_end = now + self._interval
            self._next_round = now + self._interval * self._rng.uniform(0.5, 1.0)
        else:
            period = p.goset_interval_min + self._rng.uniform(0.0, p.goset_jitter)
            self._interval_end = now + period
            self._next_round = now  # a fixed-period round opens its period

    def respond_soon(self, now: float, *, claim: bool = False, insist: bool = False) -> None:
        """A neighbour's set differs from ours: answer its pending claims (asks and
        helps) and, with ``claim``, send our full claim, in a while (keys in flight as
        novelties land meanwhile, and a difference that has gone sends nothing), at most
        once per ``goset_respond_holdoff``; the Trickle interval stays. ``insist``: the
        claim goes out even if neighbours said the same in this interval."""
        if self._interval_end is None:
            return
        self._respond_claim |= claim
        self._respond_insist |= insist
        if self._respond_at is not None:
            return
        p = self.policy
        self._respond_want = now + self._rng.uniform(0.5, 1.0) * p.goset_respond_delay
        self._respond_at = max(self._respond_want, self._respond_ok)

    @property
    def _first_gap(self) -> float:
        """The wait after a response round that sent something, before any backing off."""
        return 2 * self.policy.goset_interval_min

    def _progress(self) -> None:
        """The sets came closer (a key added, a claim equal to ours): responses that
        backed off may go soon again."""
        gap = self._first_gap
        if self._respond_gap <= gap:
            return
        self._respond_gap = gap
        if self._respond_sent_at is not None:
            self._respond_ok = self._respond_sent_at + gap
            if self._respond_at is not None:
                self._respond_at = min(self._respond_at,
                                       max(self._respond_want, self._respond_ok))

    def deadline(self) -> float | None:
        """When :meth:`on_timer` next has work; None while the set is empty."""
        if self._interval_end is None:
            return None
        t = self._interval_end if self._round_done else self._next_round
        respond = self._respond_at  # (min() without the call: asked after every frame)
        return t if respond is None or not respond < t else respond

    def on_timer(self, now: float) -> list[GosetOut]:
        """Run a round if one is due; return the packets it sends."""
        if self._interval_end is None:
            return []
        out: list[GosetOut] = []
        if self._respond_at is not None and now >= self._respond_at:
            p = self.policy
            quiet_at = self._added_at + p.goset_respond_delay
            if now < quiet_at:
                # keys are still arriving: what differed may be on its way to both; look
                # again once they have stopped (not after the holdoff: nothing was settled)
                self._respond_at = quiet_at
            else:
                self._respond_at = None
                out = (self._round(insist=self._respond_insist) if self._respond_claim
                       else self._answer_pending())
                self._respond_claim = self._respond_insist = False
                # a difference that lasts gets the next response soon (a set far apart
                # takes many asks and helps), later each time with goset_respond_backoff
                # until a key comes or a claim shows we agree; one that had gone by
                # itself, only after the holdoff. Backing off only while a radio is
                # short of airtime: with airtime to spare, a set far apart is helped on
                self._respond_sent_at = now if out else None
                if not out:
                    self._respond_ok = now + p.goset_respond_holdoff
                elif p.goset_respond_backoff and self._scarce(now):
                    self._respond_ok = now + self._respond_gap
                    self._respond_gap = min(2 * self._respond_gap, p.goset_respond_holdoff)
                else:
                    self._respond_gap = self._first_gap
                    self._respond_ok = now + self._respond_gap
        elif not self._round_done and now >= self._next_round:
            self._round_done = True
            out = self._round()
        if self._round_done and now >= self._interval_end:
            if self.policy.trickle:
                self._interval = min(2 * self._interval, self.policy.goset_interval_max)
            self._start_interval(now)
        return out

    # --- a round ----------------------------------------------------------------------
    def _round(self, *, insist: bool = False) -> list[GosetOut]:
        """A round: a novelty, our full claim (unless enough neighbours said the same in
        this interval, and we do not ``insist``) and the answers to pending claims."""
        p = self.policy
        self.rounds += 1
        out: list[GosetOut] = []
        if self._novelty_queue and len(self.keys) >= self.largest_cnt_seen:
            out.append(GosetOut(Novelty(self._novelty_queue.pop(0)).encode()))
        if (not insist and p.claim_redundancy
                and self._heard_consistent >= p.claim_redundancy):
            self.claims_suppressed += 1
        elif len(self.keys) == 1 and p.single_key_novelty:
            out.append(GosetOut(Novelty(self.keys[0]).encode()))
        else:
            full = self.full_claim()
            assert full is not None
            out.append(GosetOut(full.encode(), full=True))
        out.extend(self._answer_pending())
        return out

    def _answer_pending(self) -> list[GosetOut]:
        p = self.policy
        asks = helps = 0
        out: list[GosetOut] = []
        for key, pend in sorted(self._pending.items(), key=lambda kv: kv[0][0]):
            c, faces = pend.claim, frozenset(pend.faces)
            lo_i, hi_i = self._index.get(c.lo), self._index.get(c.hi)
            if lo_i is None or hi_i is None or lo_i > hi_i:
                del self._pending[key]
                continue
            ours = make_claim(self.keys, lo_i, hi_i)
            if ours.xor == c.xor:
                del self._pending[key]
                continue
            if ours.cnt <= c.cnt and asks < p.ask_budget:
                asks += 1
                out.append(GosetOut(ours.encode(), faces))
            if ours.cnt >= c.cnt and helps < p.help_budget:
                helps += 1
                lacked = self._lacked(lo_i, hi_i, ours, c) if p.goset_xor_help else None
                packets = ([Novelty(k).encode() for k in lacked] if lacked
                           else self._help(lo_i, hi_i))
                out.extend(GosetOut(pkt, faces) for pkt in packets)
                del self._pending[key]
                continue
            pend.rounds += 1
            if p.pending_rounds and pend.rounds >= p.pending_rounds:
                del self._pending[key]
        return out

    def _lacked(self, lo_i: int, hi_i: int, ours: Claim, theirs: Claim) -> list[bytes] | None:
        """The keys strictly inside our range ``lo_i..hi_i`` that a peer's claim over
        the same ends lacks, when it lacks 1 to :data:`XOR_HELP_MAX` of ours and nothing
        else: the XOR of the two claims is then the XOR of exactly those keys, and the
        only subset of that size among ours with that XOR (any other would be a
        collision of 256-bit XORs). None when no such subset exists (the peer also holds
        keys we lack, or lacks more): then the range is split as before."""
        d = ours.cnt - theirs.cnt
        if not 1 <= d <= XOR_HELP_MAX:
            return None
        x = int.from_bytes(ours.xor, "big") ^ int.from_bytes(theirs.xor, "big")
        # ascending, as the keys sort as unsigned big-endian byte strings
        inner = {int.from_bytes(k, "big"): k for k in self.keys[lo_i + 1:hi_i]}
        if d == 1:
            k = inner.get(x)
            return None if k is None else [k]
        values = list(inner)
        if d == 2:
            for a in values:
                b = x ^ a
                if b > a and b in inner:
                    return [inner[a], inner[b]]
            return None
        for i, a in enumerate(values):
            xa = x ^ a
            for b in values[i + 1:]:
                c = xa ^ b
                if c > b and c in inner:
                    return [inner[a], inner[b], inner[c]]
        return None

    def _help(self, lo_i: int, hi_i: int) -> list[bytes]:
        """What a peer holding the end keys lo and hi lacks from our range lo..hi."""
        inner_lo, inner_hi = lo_i + 1, hi_i - 1
        n = inner_hi - inner_lo + 1
        if n <= 0:
            return [Novelty(self.keys[hi_i]).encode()]
        if n == 1:
            return [Novelty(self.keys[inner_lo]).encode()]
        if n <= 3:
            return [make_claim(self.keys, inner_lo, inner_hi).encode()]
        mid = inner_lo + n // 2
        return [make_claim(self.keys, inner_lo, mid - 1).encode(),
                make_claim(self.keys, mid, inner_hi).encode()]

    @property
    def pending_count(self) -> int:
        return len(self._pending)
