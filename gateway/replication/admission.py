"""GOSET admission: which keys may join our GOSET, and when they leave it again.

The GOSET holds at most 100 keys (every implementation's cap), and anybody in radio or
network range can name keys. Without rules a peer fills it with random keys: the sets of
honest nodes then differ for good (their WANT/CHNK DMX differ, nothing crosses), also
after a restart, because the GOSET is rebuilt from the feed directories on disk.

The rules (:class:`Admission`, configured by the :class:`~.policy.Policy`):

* **policy**: a key joins only if the policy replicates it (``replicate_all`` or the
  ``allow`` list) and it is not on the ``deny`` list; the same holds for feeds found on
  disk at start;
* **per-face limit**: a key a neighbour names (novelty, claim end, claim middle) is
  *unproven* until a valid entry of its feed is stored; a face may have at most
  ``goset_unproven_per_face`` unproven keys at a time, further keys it names are
  refused (and counted) until some of them prove themselves or age out;
* **probation**: an unproven key that yields no valid entry within ``goset_probation``
  seconds leaves the GOSET again (and the store, while its replica is empty); so spam
  ages out and honest sets re-converge. Feeds on disk with no entry start on probation
  too. Our own feeds and feeds followed by hand are never on probation.

Sans-I/O: keys, face names and ``now`` in, decisions out.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .policy import Policy

__all__ = ["Admission"]


@dataclass(slots=True)
class Admission:
    policy: Policy
    unproven: dict[bytes, tuple[str | None, float]] = field(default_factory=dict)
    per_face: Counter[str | None] = field(default_factory=Counter)
    refused_denied: int = 0
    refused_rate: int = 0
    expired: int = 0

    def allows(self, key: bytes) -> bool:
        """Policy and deny-list only (feeds on disk, feeds met without a face)."""
        return self.policy.wants_feed(key) and key not in self.policy.deny

    def admit(self, key: bytes, face: str | None, now: float) -> bool:
        """May ``key``, named by a neighbour on ``face``, join the GOSET now? If yes it
        is unproven from ``now`` on."""
        if not self.allows(key):
            self.refused_denied += 1
            return False
        if face is not None and self.per_face[face] >= self.policy.goset_unproven_per_face:
            self.refused_rate += 1
            return False
        self.on_probation(key, face, now)
        return True

    def on_probation(self, key: bytes, face: str | None, now: float) -> None:
        if key not in self.unproven:
            self.unproven[key] = (face, now)
            self.per_face[face] += 1

    def proven(self, key: bytes) -> None:
        """A valid entry of ``key`` was stored: it stays."""
        hit = self.unproven.pop(key, None)
        if hit is not None:
            self._release(hit[0])

    def _release(self, face: str | None) -> None:
        self.per_face[face] -= 1
        if self.per_face[face] <= 0:
            del self.per_face[face]

    def deadline(self) -> float | None:
        """When the oldest unproven key ages out (None: none is on probation)."""
        if not self.unproven:
            return None
        return min(t for _, t in self.unproven.values()) + self.policy.goset_probation

    def take_expired(self, now: float) -> list[bytes]:
        """Unproven keys whose probation is over (they leave the GOSET)."""
        probation = self.policy.goset_probation
        gone = [k for k, (_, t) in self.unproven.items() if t + probation <= now]
        for key in gone:
            self._release(self.unproven.pop(key)[0])
        self.expired += len(gone)
        return gone
