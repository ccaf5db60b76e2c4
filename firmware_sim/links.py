"""Point-to-point links between two nodes: BLE connections and IP backhaul.

Both are reliable and ordered, as a BLE connection (link-layer acknowledgements) and a
TCP/WebSocket connection are. A frame reaches the other end after the time it takes to
clock it out at ``rate_bps`` (frames queue behind each other in each direction) plus
``latency``. IP links default to latency only; BLE links are slower per byte and only
form between nodes within ``BLE_RANGE_M`` of each other.

The BLE defaults are assumptions, not measurements: 30 m range for a phone in the open,
one packet per 30 ms connection event (the interval phones typically grant) and an
effective 125 kbit/s once ATT write-with-response overhead is paid.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum

__all__ = [
    "BLE_LATENCY_S",
    "BLE_RANGE_M",
    "BLE_RATE_BPS",
    "IP_LATENCY_S",
    "LinkKind",
    "PointLink",
]

BLE_RANGE_M = 30.0
BLE_LATENCY_S = 0.03
BLE_RATE_BPS = 125_000.0
IP_LATENCY_S = 0.05


class LinkKind(Enum):
    BLE = "ble"
    IP = "ip"


@dataclass(slots=True)
class PointLink:
    """A link between nodes ``a`` and ``b``; each end sees a face named ``kind:peer``."""

    kind: LinkKind
    a: str
    b: str
    latency: float
    rate_bps: float = math.inf
    _free_at: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.a == self.b:
            raise ValueError(f"a link needs two different nodes, got {self.a!r} twice")
        if self.latency < 0 or self.rate_bps <= 0:
            raise ValueError("a link needs latency >= 0 and a positive rate")

    def face(self, node: str) -> str:
        """The face name ``node`` uses for this link."""
        return f"{self.kind.value}:{self.peer(node)}"

    def peer(self, node: str) -> str:
        if node == self.a:
            return self.b
        if node == self.b:
            return self.a
        raise ValueError(f"{node!r} is not an end of the link {self.a}-{self.b}")

    def arrival(self, sender: str, frame_len: int, now: float) -> float:
        """When a frame of ``frame_len`` bytes sent by ``sender`` now reaches the peer."""
        start = max(now, self._free_at.get(sender, now))
        done = start + frame_len * 8 / self.rate_bps
        self._free_at[sender] = done
        return done + self.latency
