"""When a push face asks: WANT and CHNK only repair what the push did not bring.

On a face where entries, chunks and keys are pushed (:mod:`.relay`), a node does not
poll its neighbours. It asks

* after a *hint* that a neighbour holds something we lack: a WANT under our DMX that
  shows more than we hold, or an entry- or chunk-sized frame we could not place (an
  entry after one we missed, a chunk of an entry we lack); the request waits
  ``request_delay`` first, since the push may still bring it;
* when a side chain is still unfinished ``request_delay`` after its entry arrived: a
  CHNK alone (a WANT would only repeat what the neighbours know);
* while requests bring answers, again after the measured round trip, to pull the rest;
* otherwise as a slow beacon, every ``push_rtt_max`` (from half of it to all of it, at
  random): the WANT tells neighbours what we hold, so that whoever lacks something asks
  us, and an unfinished chain is asked for again after ``rtt_max``.

The Node decides which hints count (:meth:`Node._agreed`: nobody understands requests
under a GOSET no neighbour holds).
"""

from __future__ import annotations

import random

from .policy import Policy

__all__ = ["REPAIR_RETRIES", "RepairTimer"]

REPAIR_RETRIES = 3  # requests after a hint that bring nothing, before the beacon pace
CHAIN_WAIT = 4  # request delays from an entry to the CHNK for its chunks, if still missing


class RepairTimer:
    """The request timer of one push face (the same calls as :class:`RequestTimer`).

    Two times: when the next WANT is due (``want_at``) and when a CHNK alone is
    (``chnk_at``); a round at or after ``want_at`` sends both."""

    __slots__ = ("_arrived", "_retries", "_rng", "_sent_at", "chnk_at", "delay", "hinted",
                 "open_hint", "policy", "rtt", "want_at")

    def __init__(self, policy: Policy, now: float, rng: random.Random, *,
                 first_within: float) -> None:
        self.policy = policy
        self._rng = rng
        self.rtt = policy.rtt_initial  # the follow-up pace while answers come
        self.want_at = now + rng.uniform(0.0, first_within)
        self.chnk_at = float("inf")
        self._sent_at: float | None = None
        self._arrived = False
        self._retries = 0  # after a hint: requests left before falling back to the beacon
        self.hinted = False  # the round due asks because of a hint (not as a beacon)
        # a hint the Node cannot check off (a frame we could not place, our news): only
        # hints a neighbour's WANT gave (which feeds, up to which entry) can settle
        self.open_hint = False
        self.delay = policy.request_delay  # from a hint to its request (the Node sets it)

    @property
    def next_at(self) -> float:
        # min() without the call (the same float): asked after every frame taken in
        want, chnk = self.want_at, self.chnk_at
        return chnk if chnk < want else want  # noqa: FURB136 - min() costs a call

    def due(self, now: float) -> bool:
        return now >= self.next_at

    def wants(self, now: float) -> bool:
        """Does the round due now include a WANT?"""
        return now >= self.want_at

    def sent(self, now: float, cycle_end: bool = True, lacking: bool = False,
             neighbours: float = 1.0) -> None:
        """A request round went out now. ``cycle_end``: its WANT (if any) ended a pass
        over the set; ``lacking``: a side chain is still unfinished; ``neighbours``: how
        many neighbours relay what we hear (each of them beacons too, so ours may be
        rarer in proportion)."""
        p = self.policy
        if now >= self.want_at:
            if self._arrived:  # it paid: pull on at the pace the answers came
                self.want_at = now + self.rtt
            elif not cycle_end:  # the rest of a large set, in the next window
                self.want_at = now + min(self.rtt, p.rtt_initial)
            elif self._retries:  # a hint said a neighbour has more: the request or its
                # answers may have been lost on the way; ask again, later each time
                self._retries -= 1
                self.want_at = now + self._delay() * 2 ** (REPAIR_RETRIES - self._retries)
            else:  # the slow beacon
                self.want_at = self._beacon_at(now, neighbours)
        self.chnk_at = now + CHAIN_WAIT * self._delay() if lacking else float("inf")
        self._sent_at = now
        self._arrived = False
        self.hinted = self._retries > 0
        self.open_hint = self.open_hint and self.hinted

    def arrival(self, now: float) -> None:
        """An entry or chunk arrived; it answers our request if it came within the round
        trip (else it was pushed, and says nothing about our requests)."""
        p = self.policy
        if self._sent_at is None or now - self._sent_at > max(self.rtt, p.rtt_initial):
            return
        if not self._arrived:
            self.rtt = max(p.rtt_alpha * self.rtt + (1 - p.rtt_alpha) * (now - self._sent_at),
                           p.rtt_min)
        self._arrived = True

    def postpone(self, until: float) -> None:
        """Not before ``until`` (the face cannot send earlier)."""
        self.want_at = max(self.want_at, until)
        self.chnk_at = max(self.chnk_at, until)

    def rearm(self, now: float, *, retries: bool = True, checkable: bool = False) -> None:
        """A hint: a neighbour holds more than we do. Ask after ``request_delay``, and
        (``retries``) again, up to ``REPAIR_RETRIES`` times, while nothing comes.
        ``checkable``: the Node knows what the hint showed, and :meth:`settle` ends it
        once we hold that."""
        self.want_at = min(self.want_at, now + self._delay())
        self.hinted = True
        self.open_hint = self.open_hint or not checkable
        if retries:
            self._retries = REPAIR_RETRIES

    def settle(self, now: float, neighbours: float = 1.0) -> None:
        """What the hints showed has arrived (pushed, or answered to a neighbour's
        request): no request, and no retries; back to the beacon's pace."""
        self._retries = 0
        self.hinted = False
        self.want_at = self._beacon_at(now, neighbours)

    def _beacon_at(self, now: float, neighbours: float) -> float:
        """The next slow beacon: ``push_rtt_max`` times the neighbours that beacon too,
        half of it to all of it at random."""
        return now + (self.policy.push_rtt_max * max(1.0, neighbours)
                      * self._rng.uniform(0.5, 1.0))

    @property
    def following(self) -> bool:
        """The round due pulls on after answers came (not a hint's request)."""
        return self._arrived

    def advertise(self, now: float) -> None:
        """We relayed news that no neighbour relayed on (we waited for that): a WANT now
        shows neighbours what we hold, and whoever lacks it asks."""
        self.want_at = min(self.want_at, now)
        self.hinted = True
        self.open_hint = True

    def chain_check(self, now: float) -> None:
        """An entry with a side chain arrived: ask for the chunks (a CHNK alone) if they
        have not come ``CHAIN_WAIT`` x ``request_delay`` from now (relays of a chunk
        wait for their turn, for the budget and for a quiet channel)."""
        self.chnk_at = min(self.chnk_at, now + CHAIN_WAIT * self._delay())

    def _delay(self) -> float:
        """``delay`` (the Node's pace: ``request_delay``, or ``request_delay_scarce``
        while airtime is scarce), give or take half: neighbours that heard the same hint
        at the same instant must not all ask at the next same instant."""
        return self.delay * self._rng.uniform(0.5, 1.5)
