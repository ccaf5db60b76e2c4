"""Faces: the links a Node sends on, their send queues and their airtime budgets.

A face is a LoRa dongle, one BLE peer, a UDP multicast group, a WebSocket peer or a
simulated radio. It is *broadcast* (everybody in range hears every frame) or
*point-to-point*; it has an MTU, a framing (CRC32 trailer or none) and a send budget.
A LoRa face carries a duty-cycle budget counted in airtime over a sliding window,
computed with :func:`gateway.wire.lora.airtime`, and a minimum gap between
transmissions. Nothing leaves a face that would exceed its budget: the frame waits.

The send queue never holds the same packet twice, puts answers before GOSET traffic
before new requests, and lets a newer request replace an older one of the same kind
(the older one is stale by then).
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from dataclasses import dataclass, field
from enum import Enum, IntEnum

from ..wire.crc import CRC_LEN
from ..wire.entry import PACKET_LEN
from ..wire.lora import LoRaParams
from .events import FrameKind

__all__ = ["IP_MTU", "AirtimeBudget", "Face", "FaceKind", "Priority", "Queued", "SendQueue"]

IP_MTU = 1024
"""MTU of IP faces (WebSocket, UDP): the longest WANT/CHNK vector a peer may send us.
The reference tinyISP ISP puts every unfinished side chain of a set into one CHNK
(202-356 B seen, wire-compat.md section 2.3 of tinyisp.md); radio and BLE faces keep
120. Entries, chunks and GOSET packets have fixed sizes on every face."""


class FaceKind(Enum):
    BROADCAST = "broadcast"
    POINT_TO_POINT = "p2p"


class Priority(IntEnum):
    """Queue order: lower goes first."""

    URGENT = -1  # a WANT/CHNK that must not wait behind relays (Policy.beacon_floor)
    ANSWER = 0  # entries and chunks asked for
    GOSET = 1
    REQUEST = 2  # WANT and CHNK


@dataclass(frozen=True, slots=True)
class Face:
    """How one link behaves. ``crc`` adds and checks the 4-byte CRC32 trailer.

    ``mtu`` bounds the packets (without the CRC) the face carries both ways: ours are
    never longer than 120 B, and a peer's WANT/CHNK vector may be up to ``mtu`` long
    (:data:`IP_MTU` on IP faces); longer frames are dropped and counted."""

    name: str
    kind: FaceKind = FaceKind.BROADCAST
    mtu: int = PACKET_LEN
    crc: bool = False
    lora: LoRaParams | None = None
    duty_cycle: float = 0.0  # share of ``duty_window`` the face may be on air; 0: no limit
    duty_window: float = 3600.0
    min_gap: float = 0.0  # seconds between the starts of two transmissions
    queue_size: int = 5
    # token bucket (pacing.py): ``burst`` frames back to back, then ``rate`` per second;
    # rate 0: no bucket (UDP faces pace, so that a 4-slot ESP32 queue keeps up)
    rate: float = 0.0
    burst: int = 1
    # airtime by packet length, worked out once: the Node asks for every frame it queues,
    # times and sends (not a setting: no part of equality, hashing or replace())
    _airtimes: dict[int, float] = field(default_factory=dict, init=False, repr=False,
                                        compare=False, hash=False)

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a face needs a name")
        if self.mtu < 8:
            raise ValueError(f"face {self.name}: MTU {self.mtu} is too small")
        if not 0 <= self.duty_cycle <= 1 or self.duty_window <= 0:
            raise ValueError(f"face {self.name}: duty cycle must be in [0, 1], window > 0")
        if self.duty_cycle and self.lora is None:
            raise ValueError(f"face {self.name}: a duty cycle needs LoRa parameters")
        if self.queue_size < 1 or self.min_gap < 0:
            raise ValueError(f"face {self.name}: queue_size >= 1 and min_gap >= 0 required")
        if self.rate < 0 or self.burst < 1:
            raise ValueError(f"face {self.name}: rate >= 0 and burst >= 1 required")

    @classmethod
    def lora_radio(cls, name: str, params: LoRaParams, *, duty_cycle: float = 0.01,
                   min_gap: float = 0.0, queue_size: int = 5) -> Face:
        """A LoRa face: broadcast, CRC32 trailer, airtime-budgeted."""
        return cls(name, crc=True, lora=params, duty_cycle=duty_cycle, min_gap=min_gap,
                   queue_size=queue_size)

    @classmethod
    def dongle(cls, name: str, params: LoRaParams, *, duty_cycle: float = 0.01,
               queue_size: int = 5) -> Face:
        """A LoRa face behind our dongle, which adds and checks the CRC itself."""
        return cls(name, lora=params, duty_cycle=duty_cycle, queue_size=queue_size)

    def wire_len(self, packet_len: int) -> int:
        """Bytes on the link for a packet of ``packet_len`` bytes."""
        return packet_len + (CRC_LEN if self.crc else 0)

    def airtime(self, packet_len: int) -> float:
        """Seconds on air for one packet; 0 for links without a radio model."""
        t = self._airtimes.get(packet_len)
        if t is None:
            t = self._airtimes[packet_len] = (self.lora.airtime(self.wire_len(packet_len))
                                              if self.lora is not None else 0.0)
        return t


_INF = float("inf")


class AirtimeBudget:
    """Airtime spent in a sliding window, against a duty-cycle limit.

    Kept in whole microseconds, so that adding and expiring never drifts.
    """

    __slots__ = ("_ledger", "_used", "limit", "window")

    def __init__(self, duty_cycle: float, window: float) -> None:
        self.limit = round(duty_cycle * window * 1e6)  # microseconds of airtime per window
        self.window = window
        self._ledger: deque[tuple[float, int]] = deque()  # (start, airtime in us)
        self._used = 0

    def _expire(self, now: float) -> None:
        # the same comparison as ``earliest`` (start + window), so a transmission it
        # schedules finds the budget freed at exactly that time
        ledger, window = self._ledger, self.window
        while ledger and ledger[0][0] + window <= now:
            self._used -= ledger.popleft()[1]

    def used(self, now: float) -> float:
        """Seconds of airtime spent in the window that ends at ``now``."""
        self._expire(now)
        return self._used / 1e6

    def allows(self, now: float, airtime: float) -> bool:
        self._expire(now)
        return self._used + round(airtime * 1e6) <= self.limit

    def earliest(self, now: float, airtime: float) -> float:
        """The first time at which a transmission of ``airtime`` fits the budget."""
        ledger, window = self._ledger, self.window
        while ledger and ledger[0][0] + window <= now:  # _expire(), inlined: a hot path
            self._used -= ledger.popleft()[1]
        need = round(airtime * 1e6)
        if need > self.limit:
            return _INF
        excess = self._used + need - self.limit
        if excess <= 0:  # fits now (the loop below would not run)
            return now
        t = now
        for start, spent in ledger:
            if excess <= 0:
                break
            excess -= spent
            t = start + window
        return max(t, now)

    def spend(self, now: float, airtime: float) -> None:
        us = round(airtime * 1e6)
        self._ledger.append((now, us))
        self._used += us


@dataclass(slots=True)
class Queued:
    """One packet waiting to go out, with what the Node knows about it (for captures)."""

    packet: bytes
    priority: Priority
    kind: FrameKind
    supersede: str | None = None  # a newer packet with the same key replaces this one
    fid: bytes | None = None
    seq: int | None = None
    cnr: int | None = None

    # written out: the generated one runs as plain Python even in the compiled build,
    # and this class is made per frame
    def __init__(self, packet: bytes, priority: Priority, kind: FrameKind,
                 supersede: str | None = None, fid: bytes | None = None,
                 seq: int | None = None, cnr: int | None = None) -> None:
        self.packet = packet
        self.priority = priority
        self.kind = kind
        self.supersede = supersede
        self.fid = fid
        self.seq = seq
        self.cnr = cnr


@dataclass(slots=True)
class SendQueue:
    """Bounded, duplicate-free, answers first."""

    capacity: int
    items: list[Queued] = field(default_factory=list)
    dropped: int = 0
    superseded: int = 0
    _packets: set[bytes] = field(default_factory=set)

    def __len__(self) -> int:
        return len(self.items)

    def __contains__(self, packet: bytes) -> bool:
        return packet in self._packets

    def put(self, item: Queued) -> bool:
        """Queue ``item``; False if it was a duplicate or found no room."""
        if item.packet in self._packets:
            return False
        if item.supersede is not None:
            for i, q in enumerate(self.items):
                if q.supersede == item.supersede:
                    self._packets.discard(q.packet)
                    del self.items[i]
                    self.superseded += 1
                    self._insert(item)
                    return True
        if len(self.items) >= self.capacity:
            # the items are sorted by priority, FIFO within: the last is the least urgent
            if self.items[-1].priority <= item.priority:
                self.dropped += 1
                return False
            self._packets.discard(self.items.pop().packet)  # a request makes room
            self.dropped += 1
        self._insert(item)
        return True

    def _insert(self, item: Queued) -> None:
        """After every queued item of the same or a more urgent priority (FIFO within)."""
        at = bisect_right(self.items, item.priority, key=lambda q: q.priority)
        self.items.insert(at, item)
        self._packets.add(item.packet)

    def refuses(self, priority: Priority) -> bool:
        """Would a packet of ``priority`` find no room (the queue is full of packets at
        least as urgent)? Lets the Node skip building answers nobody can take."""
        return len(self.items) >= self.capacity and self.items[-1].priority <= priority

    def peek(self) -> Queued | None:
        return self.items[0] if self.items else None

    def pop(self) -> Queued:
        item = self.items.pop(0)
        self._packets.discard(item.packet)
        return item

    def discard_kinds(self, kinds: set[FrameKind]) -> None:
        """Remove every queued packet of these kinds."""
        self.items[:] = [q for q in self.items if q.kind not in kinds]
        self._packets = {q.packet for q in self.items}

    def discard_superseding(self, keys: set[str]) -> None:
        """Remove every queued packet whose supersede key is one of ``keys``."""
        self.items[:] = [q for q in self.items if q.supersede not in keys]
        self._packets = {q.packet for q in self.items}

    def discard(self, packet: bytes) -> bool:
        """Remove ``packet`` if queued (a neighbour already sent it)."""
        if packet not in self._packets:
            return False
        for i, q in enumerate(self.items):
            if q.packet == packet:
                del self.items[i]
                self._packets.discard(packet)
                return True
        return False
