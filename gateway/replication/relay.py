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

import heapq
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
    answer: bool = False  # asked for by a WANT/CHNK (else pushed unasked)

    # written out: the generated one runs as plain Python even in the compiled build,
    # and this class is made per frame
    def __init__(self, packet: bytes, kind: FrameKind, due: float, heard: int,
                 fid: bytes | None = None, seq: int | None = None, cnr: int | None = None,
                 answer: bool = False) -> None:
        self.packet = packet
        self.kind = kind
        self.due = due
        self.heard = heard
        self.fid = fid
        self.seq = seq
        self.cnr = cnr
        self.answer = answer


class RelayQueue:
    """The packets one face will relay, unless enough copies are overheard first.

    Packets leave by due time; within one feed (a novelty counts as its key's feed) in
    the order they were scheduled, since a receiver can only take an entry after its
    predecessor, a chunk after its entry, and any of them after the key."""

    __slots__ = (
        "_feed_due",
        "_heap",
        "_items",
        "_seq",
        "cancelled",
        "capacity",
        "overflowed",
        "redundancy",
    )

    def __init__(self, redundancy: int, capacity: int) -> None:
        self.redundancy = redundancy
        self.capacity = capacity
        self._items: dict[bytes, Relay] = {}
        self._heap: list[tuple[float, int, bytes]] = []  # (due, order, packet), lazily pruned
        self._seq = 0
        self._feed_due: dict[bytes | None, float] = {}  # the last due time per feed
        self.cancelled = 0  # relays given up because neighbours said it often enough
        self.overflowed = 0  # relays pushed out by newer ones

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, packet: bytes) -> bool:
        return packet in self._items

    def schedule(self, relay: Relay) -> bool:
        """Add ``relay`` (no earlier than its feed's previous one); False if known, or if
        its copies heard already reach the redundancy (cancelled at once: copies heard
        before the item could be stored count too)."""
        if relay.heard >= self.redundancy:
            self.cancelled += 1
            return False
        if relay.packet in self._items:
            return False
        if relay.fid is not None:
            relay.due = max(relay.due, self._feed_due.get(relay.fid, float("-inf")))
            self._feed_due[relay.fid] = relay.due
        self._items[relay.packet] = relay
        self._seq += 1
        heapq.heappush(self._heap, (relay.due, self._seq, relay.packet))
        if len(self._items) > self.capacity:
            del self._items[next(iter(self._items))]  # the oldest scheduled
            self.overflowed += 1
        if len(self._heap) > 4 * self.capacity + 16:
            self._compact()
        return True

    def _compact(self) -> None:
        items = self._items
        self._heap = [h for h in self._heap if h[2] in items and items[h[2]].due == h[0]]
        heapq.heapify(self._heap)
        self._feed_due = {r.fid: r.due for r in items.values() if r.fid is not None}

    def heard(self, packet: bytes) -> None:
        """A copy of ``packet`` went by on the face."""
        relay = self._items.get(packet)
        if relay is None:
            return
        relay.heard += 1
        if relay.heard >= self.redundancy:
            del self._items[packet]
            self.cancelled += 1

    def peek(self) -> Relay | None:
        """The packet due first; None when nothing waits (entries of cancelled or
        rescheduled relays still on the heap are dropped on the way)."""
        heap, items = self._heap, self._items
        while heap:
            due, _, packet = heap[0]
            relay = items.get(packet)
            if relay is not None and relay.due == due:
                return relay
            heapq.heappop(heap)
        return None

    def pop(self) -> Relay:
        """Take the packet due first (there must be one)."""
        head = self.peek()
        assert head is not None
        heapq.heappop(self._heap)
        del self._items[head.packet]
        return head
