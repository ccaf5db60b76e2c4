"""Tunnelled c2c entries: a wire out of a data entry, back into its c2c feed.

A wire is an entry's 120-byte packet followed by its side-chain chunks in order, carried
raw (no tag, no framing) as the content of one data entry (tinyisp.md section 3). The
receiver hands slice 0 to the Node as if it came from a radio: the Node checks the DMX
and the signature against the c2c feed's own key, so whoever carries the wire (the ISP)
can drop or delay an entry but never forge one. The chunks follow through the Node's
chunk-hash table.

Only the DMX of the c2c feeds the contract's peer writes are accepted: a wire can never
land in another feed. A wire whose DMX is not armed yet (it arrived before its
predecessor, or before the subscription is known) is held under that DMX, up to
``hold_max`` per contract, and tried again whenever something new was stored. A wire
that repeats an entry we hold is dropped (its chunks still fill a side chain that is
incomplete).
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from enum import Enum

from ..wire.entry import DMX_LEN, PACKET_LEN, chunks_needed
from ..wire.errors import PacketError
from .context import Ctx, fid_s
from .model import Contract

__all__ = ["Outcome", "inject", "retry_held"]

log = logging.getLogger(__name__)


class Outcome(Enum):
    STORED = "stored"
    HELD = "held"
    DUPLICATE = "duplicate"
    REJECTED = "rejected"


def _armed(ctx: Ctx, feeds: Collection[bytes]) -> dict[bytes, bytes]:
    """Next-entry DMX -> feed, for the feeds in ``feeds`` we hold."""
    out = {}
    for fid in feeds:
        replica = ctx.store.get(fid)
        if replica is not None:
            out[replica.next_dmx()] = fid
    return out


def _held_already(ctx: Ctx, packet: bytes, feeds: Collection[bytes]) -> bytes | None:
    """The feed among ``feeds`` that holds ``packet`` already (newest entries first)."""
    for fid in feeds:
        for seq in range(ctx.length(fid), 0, -1):
            if ctx.store.read_packet(fid, seq) == packet:
                return fid
    return None


def _slices(wire: bytes) -> list[bytes] | None:
    if len(wire) < PACKET_LEN or len(wire) % PACKET_LEN:
        return None
    packet = wire[:PACKET_LEN]
    try:
        n = chunks_needed(packet)
    except PacketError:
        return None
    if len(wire) != PACKET_LEN * (1 + n):
        return None
    return [wire[i:i + PACKET_LEN] for i in range(0, len(wire), PACKET_LEN)]


def inject(ctx: Ctx, c: Contract, wire: bytes, feeds: Collection[bytes]) -> Outcome:
    """Store the tunnelled ``wire`` in whichever of ``feeds`` (c2c feeds the peer writes)
    it continues; hold it if none does yet."""
    where = f"{ctx.node.name}: contract {fid_s(c.cid)}"
    slices = _slices(wire)
    if slices is None:
        log.warning("%s: a %d-byte data entry is neither a message nor a wire; dropped",
                    where, len(wire))
        return Outcome.REJECTED
    packet, chunks = slices[0], slices[1:]
    dmx = packet[:DMX_LEN]
    fid = _armed(ctx, feeds).get(dmx)
    if fid is not None:
        stored = ctx.node.ingest(ctx.now, packet)
        if not any(s.fid == fid and s.cnr is None for s in stored):
            log.warning("%s: tunnelled entry for c2c feed %s does not verify; dropped",
                        where, fid_s(fid))
            return Outcome.REJECTED
        seq = ctx.length(fid)
        for chunk in chunks:
            ctx.node.ingest(ctx.now, chunk)
        if not ctx.complete(fid, seq):
            log.warning("%s: tunnelled entry %d of c2c feed %s came with a broken side "
                        "chain; waiting for a good copy", where, seq, fid_s(fid))
        return Outcome.STORED
    holder = _held_already(ctx, packet, feeds)
    if holder is not None:
        for chunk in chunks:  # they may complete a chain a bad copy left open
            ctx.node.ingest(ctx.now, chunk)
        log.debug("%s: tunnelled entry of %s is a repeat; dropped", where, fid_s(holder))
        return Outcome.DUPLICATE
    held = c.reader.held
    held.pop(dmx, None)
    held[dmx] = bytes(wire)
    while len(held) > ctx.params.hold_max:
        oldest = next(iter(held))
        del held[oldest]
        log.info("%s: more than %d tunnelled entries waiting; dropped the oldest",
                    where, ctx.params.hold_max)
    log.debug("%s: tunnelled entry %s does not fit yet; held", where, dmx.hex())
    ctx.dirty = True
    return Outcome.HELD


def retry_held(ctx: Ctx, c: Contract, feeds: Collection[bytes]) -> bool:
    """Inject every held wire whose DMX is armed now; True if any was stored."""
    held = c.reader.held
    stored_any = False
    while held:
        armed = _armed(ctx, feeds)
        ready = [dmx for dmx in held if dmx in armed]
        if not ready:
            break
        for dmx in ready:
            wire = held.pop(dmx)
            ctx.dirty = True
            if inject(ctx, c, wire, feeds) is Outcome.STORED:
                stored_any = True
    return stored_any
