"""Pacing answers on IP faces: a token bucket per face and a credit that adapts.

A WANT answered with 100 entries at once over UDP multicast overruns small peers: the
ESP32 firmware's radio receive queue holds 4 frames ("rcvd too many LoRa pkts" for the
rest), and the reference tinyISP ISP gets a whole data feed in one go (issue 15).

* :class:`TokenBucket`: a face sends at most ``burst`` frames back to back, then one per
  ``1/rate`` seconds (UDP faces; a face's ``rate`` and ``burst``).
* :class:`AnswerCredit`: how many packets one request gets, per face. It starts small
  and doubles while the peer's next request shows it took everything we sent (its next
  wanted sequence or chunk number moved past all of it); when it took less, the credit
  falls to what it took. Never above the policy's credit, never below ``credit_min``.
  (A broadcast face mixes its peers' requests: the credit follows whoever asks.)
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

__all__ = ["AnswerCredit", "TokenBucket"]

K = TypeVar("K", bound=Hashable)


class TokenBucket:
    """``burst`` frames at once, refilled at ``rate`` frames per second."""

    __slots__ = ("_last", "_tokens", "burst", "rate")

    def __init__(self, rate: float, burst: int) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("a token bucket needs rate > 0 and burst >= 1")
        self.rate = rate
        self.burst = burst
        self._tokens = float(burst)
        self._last = float("-inf")

    def _refill(self, now: float) -> None:
        if now > self._last:
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.rate)
            self._last = now

    def earliest(self, now: float) -> float:
        """When the next frame may go (``now`` if a token is there)."""
        self._refill(now)
        if self._tokens >= 1.0:
            return now
        return now + (1.0 - self._tokens) / self.rate

    def spend(self, now: float) -> None:
        self._refill(now)
        self._tokens -= 1.0


@dataclass(slots=True)
class AnswerCredit:
    """The per-request credit of one face (see the module notes)."""

    maximum: int
    minimum: int
    value: int = 0
    # what the last answers sent: fid -> (first seq, count); (fid, seq) -> (first cnr, count)
    _entries: dict[bytes, tuple[int, int]] = field(default_factory=dict)
    _chunks: dict[tuple[bytes, int], tuple[int, int]] = field(default_factory=dict)
    grown: int = 0
    shrunk: int = 0
    last_answer: float = float("-inf")  # when the last answer packet left

    GRACE = 0.05  # seconds after our last answer left before a request tells what arrived

    def __post_init__(self) -> None:
        self.minimum = max(1, min(self.minimum, self.maximum))
        if not self.value:
            self.value = self.minimum

    def judging(self, now: float, answers_queued: bool) -> bool:
        """May a request heard now be taken as the peer's verdict on our last answers?
        Not while some still wait to go out or have only just left (it crossed them)."""
        return not answers_queued and now >= self.last_answer + self.GRACE

    def sent_entries(self, runs: dict[bytes, tuple[int, int]]) -> None:
        """Entries sent in answer to a WANT: fid -> (first seq, how many)."""
        self._entries = runs

    def sent_chunks(self, runs: dict[tuple[bytes, int], tuple[int, int]]) -> None:
        """Chunks sent in answer to a CHNK: (fid, seq) -> (first cnr, how many)."""
        self._chunks = runs

    def want_seen(self, wanted: dict[bytes, int]) -> None:
        """The peer's next WANT: fid -> next seq it wants."""
        self._judge(self._entries, wanted)
        self._entries = {}

    def chnk_seen(self, wanted: dict[tuple[bytes, int], int]) -> None:
        """The peer's next CHNK: (fid, seq) -> next chunk number it wants."""
        self._judge(self._chunks, wanted)
        self._chunks = {}

    def _judge(self, sent: Mapping[K, tuple[int, int]], wanted: Mapping[K, int]) -> None:
        total = took = 0
        for key, (first, count) in sent.items():
            nxt = wanted.get(key)
            if nxt is None:
                continue  # the request does not say
            total += count
            took += min(max(nxt - first, 0), count)
        if not total:
            return
        if took >= total:
            if self.value < self.maximum:
                self.value = min(self.maximum, 2 * self.value)
                self.grown += 1
        else:
            new = max(self.minimum, took)
            if new < self.value:
                self.value = new
                self.shrunk += 1
