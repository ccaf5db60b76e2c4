"""Push relaying on broadcast faces: counter-based suppression of redundant rebroadcasts.

tinySSB has no connections: a node accepts any frame whose DMX (or chunk hash) it
expects, whoever sent it. So a node that stores a new entry, chunk or GOSET key can put
it on the air once, unasked, and every neighbour that lacks it takes it: the data floods
the mesh and WANT/CHNK only repair what the flood missed.

Each face keeps the packets it means to relay in a :class:`RelayQueue`. A packet waits a
random delay (a few airtimes), and every copy of it heard on the face meanwhile counts;
once ``redundancy`` copies were heard the neighbourhood has it and the relay is
cancelled (the counter-based scheme of broadcast-storm research; Meshtastic's managed
flood works alike). Packets leave in the order they were scheduled, so an entry goes
before its side-chain chunks and a novelty before the entries of its feed: a receiver
can only take them in that order.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from .events import FrameKind

__all__ = ["Relay", "RelayQueue"]


@dataclass(slots=True)
class Relay:
    """One packet waiting to be relayed; ``heard``: copies heard on the face so far."""

    packet: bytes
    kind: FrameKind
    due: float
    heard: int
    fid: bytes | None = None
    seq: int | None = None
    cnr: int | None = None


class RelayQueue:
    """The packets one face will relay, in order, unless enough copies are overheard."""

    __slots__ = ("_items", "_last_due", "capacity", "cancelled", "overflowed", "redundancy")

    def __init__(self, redundancy: int, capacity: int) -> None:
        self.redundancy = redundancy
        self.capacity = capacity
        self._items: OrderedDict[bytes, Relay] = OrderedDict()
        self._last_due = float("-inf")
        self.cancelled = 0  # relays given up because neighbours said it often enough
        self.overflowed = 0  # relays pushed out by newer ones

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, packet: bytes) -> bool:
        return packet in self._items

    def schedule(self, relay: Relay) -> bool:
        """Add ``relay`` (no earlier than the one before it); False if known already."""
        if relay.packet in self._items:
            return False
        relay.due = max(relay.due, self._last_due)
        self._last_due = relay.due
        self._items[relay.packet] = relay
        if len(self._items) > self.capacity:
            self._items.popitem(last=False)
            self.overflowed += 1
        return True

    def heard(self, packet: bytes) -> None:
        """A copy of ``packet`` went by on the face."""
        relay = self._items.get(packet)
        if relay is None:
            return
        relay.heard += 1
        if relay.heard >= self.redundancy:
            del self._items[packet]
            self.cancelled += 1

    def next_due(self) -> float | None:
        """When the first packet is due; None when nothing waits."""
        for relay in self._items.values():
            return relay.due
        return None

    def pop_due(self, now: float) -> Relay | None:
        """The first packet if it is due now."""
        for packet, relay in self._items.items():
            if relay.due > now:
                return None
            del self._items[packet]
            return relay
        return None
