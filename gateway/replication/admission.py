"""GOSET admission: which keys may join our GOSET, and when they leave it again.

The GOSET holds at most 100 keys (every implementation's cap), and anybody in radio or
network range can name keys. Without rules a peer fills it with random keys: the sets of
honest nodes then differ for good (their WANT/CHNK DMX differ, nothing crosses), also
after a restart, because the GOSET is rebuilt from the feed directories on disk.

The rules (:class:`Admission`, configured by the :class:`~.policy.Policy`):

* **policy**: a key joins only if the policy replicates it (``replicate_all`` or the
  ``allow`` list) and it is not on the ``deny`` list; the same holds for feeds found on
  disk at start;
* **per-face limit**: a face may name at most ``goset_new_keys_per_face`` new keys at
  once, refilled at that many per ``goset_new_keys_interval`` seconds (a token bucket);
  further keys it names are refused and counted (the peer names them again in its next
  claims). A cap on keys outstanding would deadlock: WANT/CHNK only work once both sets
  are equal, so an honest set larger than the cap could never prove its keys;
* **probation**: a key a neighbour names is *unproven* until a valid entry of its feed
  is stored; an unproven key that yields no valid entry within ``goset_probation``
  seconds leaves the GOSET again (and the store, while its replica is empty); so spam
  ages out and honest sets re-converge. A key that aged out is refused for two more
  probations, so that neighbours who learnt it from us drop it too instead of handing it
  back. Feeds on disk with no entry start on probation
  too. Our own feeds and feeds followed by hand are never on probation.

Sans-I/O: keys, face names and ``now`` in, decisions out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .policy import Policy

__all__ = ["Admission"]

_REFUSE_FACTOR = 2  # an aged-out key is refused for this many probations
_DROPPED_KEPT = 4096  # aged-out keys remembered at most


@dataclass(slots=True)
class Admission:
    policy: Policy
    unproven: dict[bytes, float] = field(default_factory=dict)  # key -> admitted at
    tokens: dict[str, tuple[float, float]] = field(default_factory=dict)  # face -> (n, t)
    # keys that aged out -> until when they are refused: neighbours that learnt them
    # from us later drop them later, and must not hand them back meanwhile
    dropped: dict[bytes, float] = field(default_factory=dict)
    refused_denied: int = 0
    refused_rate: int = 0
    expired: int = 0
    # the earliest time in ``unproven`` (None: to be found again): ``deadline`` is asked
    # after every frame a Node takes in, ``unproven`` changes rarely; every change to it
    # goes through the methods below, which drop this
    _oldest: float | None = field(default=None, init=False, repr=False, compare=False)

    def allows(self, key: bytes) -> bool:
        """Policy and deny-list only (feeds on disk, feeds met without a face)."""
        return self.policy.wants_feed(key) and key not in self.policy.deny

    def admit(self, key: bytes, face: str | None, now: float) -> bool:
        """May ``key``, named by a neighbour on ``face``, join the GOSET now? If yes it
        is unproven from ``now`` on."""
        if not self.allows(key):
            self.refused_denied += 1
            return False
        until = self.dropped.get(key)
        if until is not None:
            if now < until:
                self.refused_rate += 1
                return False
            del self.dropped[key]
        if face is not None:
            burst = float(self.policy.goset_new_keys_per_face)
            n, t = self.tokens.get(face, (burst, now))
            n = min(burst, n + (now - t) * burst / self.policy.goset_new_keys_interval)
            if n < 1.0:
                self.tokens[face] = (n, now)
                self.refused_rate += 1
                return False
            self.tokens[face] = (n - 1.0, now)
        self.on_probation(key, now)
        return True

    def on_probation(self, key: bytes, now: float) -> None:
        if key not in self.unproven:
            self.unproven[key] = now
            self._oldest = None

    def proven(self, key: bytes) -> None:
        """A valid entry of ``key`` was stored: it stays."""
        if self.unproven.pop(key, None) is not None:
            self._oldest = None

    def deadline(self) -> float | None:
        """When the oldest unproven key ages out (None: none is on probation)."""
        if not self.unproven or not self.policy.goset_probation:
            return None
        oldest = self._oldest
        if oldest is None:
            oldest = self._oldest = min(self.unproven.values())
        return oldest + self.policy.goset_probation

    def take_expired(self, now: float) -> list[bytes]:
        """Unproven keys whose probation is over (they leave the GOSET)."""
        probation = self.policy.goset_probation
        if not probation:  # keys never age out
            return []
        gone = [k for k, t in self.unproven.items() if t + probation <= now]
        for key in gone:
            del self.unproven[key]
            self._oldest = None
            self.dropped[key] = now + _REFUSE_FACTOR * probation
        while len(self.dropped) > _DROPPED_KEPT:
            del self.dropped[next(iter(self.dropped))]
        self.expired += len(gone)
        return gone
