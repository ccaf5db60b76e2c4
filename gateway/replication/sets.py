"""Bound sets: named sets of feeds replicated with WANT/CHNK vectors of their own.

tinyISP keeps, per contract, a root, a control and a data set besides the global GOSET
(tinyisp.md section 4). Nothing on the wire names a set: a WANT or CHNK is bound to one
by its DMX, derived from the XOR of the set's keys exactly as for the GOSET, so two nodes
answer each other's vectors only while they hold the same keys. The references switch
the claim/novelty beacon off for these sets; keys enter them through protocol messages,
so a bound set sends no claims and no novelties.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from ..wire.goset import chnk_dmx, want_dmx, xor_keys

__all__ = ["BoundSet"]


@dataclass(slots=True)
class BoundSet:
    """One named set: its keys (sorted bytewise) and the DMX of its vectors."""

    name: str
    keys: list[bytes] = field(default_factory=list)
    want_dmx: bytes = b""
    chnk_dmx: bytes = b""

    @classmethod
    def of(cls, name: str, keys: Collection[bytes]) -> BoundSet:
        ordered = sorted(set(keys))
        state = xor_keys(ordered)
        return cls(name, ordered, want_dmx(state), chnk_dmx(state))

    @property
    def want_tag(self) -> str:
        """Supersede key of this set's WANT in a send queue."""
        return "want:" + self.name

    @property
    def chnk_tag(self) -> str:
        return "chnk:" + self.name
