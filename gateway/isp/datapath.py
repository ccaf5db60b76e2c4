"""The data path of a contract: writing our data feeds and reading the peer's.

Writer (tinyisp.md section 2.3, with the reference's bugs fixed): every data entry holds
one tunnelled wire; after entry ``feed_size - 1`` the writer appends
``feedhopping_next(new)`` as entry ``feed_size``, writes ``feedhopping_prev(old)`` as
seq 1 of the new feed and continues there at once. The old feed stays ours until the
reader's ``feedhopping_fin(old)`` releases it; with ``max_feeds`` feeds unreleased the
writer pauses at the hop point and resumes on the next fin. The end of data is
``feedhopping_next(None)``, queued behind everything written before the farewell.

Reader: the peer's current data feed is read strictly in sequence, one complete entry
(side chain included) at a time, so ``feedhopping_next`` at seq ``feed_size`` is acted
upon only after every entry before it: the old feed is then released with
``feedhopping_fin`` on our control feed and deleted, and reading continues in the new
feed, whose seq 1 must name the old one.

Every step is idempotent against a restart: a hop found written but not recorded is
adopted from the feed itself.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from .context import Ctx, fid_s
from .messages import (
    FeedhoppingFin,
    FeedhoppingNext,
    FeedhoppingPrev,
    MessageError,
    decode_message,
)
from .model import Contract, Writer

__all__ = ["close_writer", "flush", "on_fin", "paused", "put", "read", "start_writer"]

log = logging.getLogger(__name__)


def start_writer(ctx: Ctx, c: Contract) -> bytes:
    """Create our first data feed (``feedhopping_prev(None)`` at seq 1)."""
    if c.writer is not None:
        return c.writer.feeds[-1]
    key = ctx.new_key()
    ctx.send(key.fid, FeedhoppingPrev(None))
    c.writer = Writer([key.fid])
    return key.fid


def put(ctx: Ctx, c: Contract, item: tuple[bytes, int]) -> bool:
    """Queue the c2c entry ``item`` (feed, seq) for our data feed; False once closed."""
    w = c.writer
    if w is None or w.closed:
        return False
    w.queue.append(item)
    ctx.dirty = True
    return True


def close_writer(ctx: Ctx, c: Contract, *, end: bool = True) -> None:
    """Accept nothing more; with ``end``, queue the end-of-data marker behind what is
    queued (without, a later call with ``end`` queues it)."""
    w = c.writer
    if w is None:
        return
    if not w.closed:
        w.closed = True
        ctx.dirty = True
    if end and not w.ended and None not in w.queue:
        w.queue.append(None)
        ctx.dirty = True


def paused(ctx: Ctx, w: Writer) -> bool:
    """Is the writer held at the hop point by flow control?"""
    return (not w.ended and ctx.length(w.feeds[-1]) == ctx.params.feed_size - 1
            and len(w.feeds) >= ctx.params.max_feeds)


def flush(ctx: Ctx, c: Contract) -> bool:
    """Write what the queue holds, hopping as needed; True if anything was appended."""
    w = c.writer
    if w is None:
        return False
    size = ctx.params.feed_size
    wrote = False
    while not w.ended:
        cur = w.feeds[-1]
        n = ctx.length(cur)
        if n >= size:
            if not _adopt_hop(ctx, c, w, cur):
                return wrote
            wrote = True
            continue
        if n == size - 1:
            if len(w.feeds) >= ctx.params.max_feeds:
                log.debug("%s: contract %s: %d data feeds unfinished, writer paused",
                          ctx.node.name, fid_s(c.cid), len(w.feeds))
                return wrote
            _hop(ctx, w, cur)
            wrote = True
            continue
        if not w.queue:
            return wrote
        item = w.queue.pop(0)
        ctx.dirty = True
        if item is None:
            ctx.send(cur, FeedhoppingNext(None))
            w.ended = True
            wrote = True
            continue
        wire = ctx.wire(*item)
        if wire is None:
            log.warning("%s: c2c entry %d of %s is gone; not tunnelled", ctx.node.name,
                        item[1], fid_s(item[0]))
            continue
        ctx.publish(cur, wire)
        wrote = True
    return wrote


def _hop(ctx: Ctx, w: Writer, cur: bytes) -> None:
    key = ctx.new_key()
    ctx.send(cur, FeedhoppingNext(key.fid))
    ctx.send(key.fid, FeedhoppingPrev(cur))
    w.feeds.append(key.fid)
    log.info("%s: data feed %s full, continuing in %s", ctx.node.name, fid_s(cur),
             fid_s(key.fid))


def _adopt_hop(ctx: Ctx, c: Contract, w: Writer, cur: bytes) -> bool:
    """``cur`` ends with a hop the state does not know (we stopped in the middle of it):
    take the new feed from its ``next`` and finish the hop."""
    content = ctx.content(cur, ctx.params.feed_size)
    try:
        msg = decode_message(content) if content is not None else None
    except MessageError:
        msg = None
    new = msg.fid if isinstance(msg, FeedhoppingNext) else None
    if new is None or ctx.keys.get(new) is None:
        log.error("%s: contract %s: our data feed %s is full but does not name a feed of "
                  "ours; nothing more can be sent", ctx.node.name, fid_s(c.cid), fid_s(cur))
        return False
    if ctx.length(new) == 0:
        ctx.send(new, FeedhoppingPrev(cur))
    w.feeds.append(new)
    ctx.dirty = True
    log.info("%s: contract %s: taking up the hop from %s to %s written before a restart",
             ctx.node.name, fid_s(c.cid), fid_s(cur), fid_s(new))
    return True


def on_fin(ctx: Ctx, c: Contract, fid: bytes) -> None:
    """The peer read our data feed ``fid`` to its end: release and delete it."""
    w = c.writer
    if w is None or fid not in w.feeds:
        log.info("%s: contract %s: feedhopping_fin for %s, which is not one of our "
                 "unfinished data feeds (a repeat); ignored", ctx.node.name, fid_s(c.cid),
                 fid_s(fid))
        return
    if fid != w.feeds[0] or len(w.feeds) == 1:
        log.warning("%s: contract %s: feedhopping_fin for %s out of order (unfinished: %s); "
                    "ignored", ctx.node.name, fid_s(c.cid), fid_s(fid),
                    ", ".join(fid_s(f) for f in w.feeds))
        return
    w.feeds.pop(0)
    ctx.discard(fid)
    log.info("%s: contract %s: peer finished our data feed %s", ctx.node.name,
             fid_s(c.cid), fid_s(fid))


def read(ctx: Ctx, c: Contract, on_wire: Callable[[bytes], object],
         on_end: Callable[[], None]) -> bool:
    """Process the peer's data entries in order as far as they are complete; True if
    anything was processed."""
    r = c.reader
    size = ctx.params.feed_size
    progressed = False
    while r.feed is not None and not r.ended and ctx.complete(r.feed, r.read + 1):
        seq = r.read = r.read + 1
        progressed = True
        ctx.dirty = True
        content = ctx.content(r.feed, seq)
        if content is None:
            continue
        where = f"{ctx.node.name}: contract {fid_s(c.cid)}: data feed {fid_s(r.feed)} #{seq}"
        try:
            msg = decode_message(content)
        except MessageError as exc:
            log.warning("%s: bad message (%s); skipped", where, exc)
            continue
        if seq == 1:
            if not isinstance(msg, FeedhoppingPrev):
                log.warning("%s: seq 1 is not feedhopping_prev; skipped", where)
            elif msg.fid != r.prev:
                log.warning("%s: feedhopping_prev names %s, expected %s", where,
                            fid_s(msg.fid), fid_s(r.prev))
            continue
        if msg is None:
            on_wire(content)
        elif isinstance(msg, FeedhoppingNext):
            if msg.fid is None:
                log.info("%s: end of data", where)
                r.ended = True
                on_end()
            elif seq != size:
                log.warning("%s: feedhopping_next at seq %d (a hop is only valid at seq %d); "
                            "ignored", where, seq, size)
            elif msg.fid == r.feed:
                log.warning("%s: feedhopping_next names the feed itself; ignored", where)
            else:
                old, r.prev, r.feed, r.read = r.feed, r.feed, msg.fid, 0
                ctx.send(c.own_ctrl, FeedhoppingFin(old))
                ctx.discard(old)
                log.info("%s: read to its end; continuing in %s", where, fid_s(msg.fid))
        else:
            log.warning("%s: %s does not belong in a data feed; skipped", where, msg.kind)
    return progressed
