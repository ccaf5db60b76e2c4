"""The reference tinyISP ISP's data-feed hop (issue 15, item 6; tinyisp.md section 2.3).

As a writer the reference ISP gets the hop wrong: where the feed is full it writes
``feedhopping_prev`` naming the old feed itself at seq 50, ``feedhopping_next(new)`` at
seq 51, and carries on writing data into the old feed (52, 53, ...); the new feed stays
empty. Our client skips both entries (prev is only valid at seq 1, next only at seq 50)
and delivers everything in the old feed: every message exactly once, in order.
"""

from __future__ import annotations

import logging

import pytest

from gateway.isp import datapath
from gateway.isp.context import Ctx
from gateway.isp.messages import FeedhoppingNext, FeedhoppingPrev, decode_message
from gateway.isp.model import Contract, Role

from .world import World, onboard, star, subscribe

_flush = datapath.flush


def reference_flush(ctx: Ctx, c: Contract) -> bool:
    """Our writer for the clients, the reference ISP's for the ISP."""
    w = c.writer
    if ctx.role is not Role.ISP or w is None:
        return _flush(ctx, c)
    cur, wrote = w.feeds[-1], False
    while w.queue and w.queue[0] is not None:
        if ctx.length(cur) == ctx.params.feed_size - 1:
            new = ctx.new_key().fid
            ctx.send(cur, FeedhoppingPrev(cur))  # seq 50, in the old feed
            ctx.send(cur, FeedhoppingNext(new))  # seq 51; nothing is ever written to new
        wire = ctx.wire(*w.queue.pop(0))
        assert wire is not None
        ctx.publish(cur, wire)  # 52, 53, ... in the old feed as well
        ctx.dirty = wrote = True
    return wrote


def test_a_hop_written_as_the_reference_isp_writes_it(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(datapath, "flush", reference_flush)
    w: World = star(2)
    onboard(w, "c0")
    onboard(w, "c1")
    subscribe(w, "c0", "c1")
    a, b, i = w.peers["c0"], w.peers["c1"], w.peers["isp"]
    caplog.set_level(logging.INFO)
    (ic,) = [x for x in i.e.contracts() if x.peer == a.root.fid]
    (towards_a,) = ic.data_out
    n0 = i.store.replica(towards_a).max_seq  # prev(None) at 1, perhaps more
    texts = [b"message %d " % k * (1 + k % 4) for k in range(63 - 2 - n0)]  # up to seq 63
    for k, text in enumerate(texts):
        b.e.send(a.root.fid, text, w.now)
        if k % 7 == 6:
            w.run_for(1.0)
    w.run_until(lambda: len(a.got) >= len(texts))
    w.run_for(30.0)  # nothing more (a duplicate) arrives
    assert [m.content for m in a.got] == texts  # every message once, in order
    feed = [decode_message(i.store.read_content(towards_a, s) or b"")
            for s in range(1, i.store.replica(towards_a).max_seq + 1)]
    assert len(feed) == 63
    assert feed[49] == FeedhoppingPrev(towards_a)  # seq 50
    assert isinstance(feed[50], FeedhoppingNext) and feed[50].fid not in (None, towards_a)
    assert all(m is None for m in feed[51:])  # data at 52..63
    assert i.store.get(feed[50].fid) is None or i.store.replica(feed[50].fid).max_seq == 0
    messages = [r.getMessage() for r in caplog.records if r.name.startswith("gateway.isp")]
    assert any("feedhopping_prev does not belong in a data feed" in m for m in messages)
    assert any("feedhopping_next at seq 51" in m for m in messages)
    (ac,) = a.e.contracts()
    assert ac.data_in == towards_a and ac.state == "established"  # no hop taken
    # and the other direction carries on as usual
    b_got = len(b.got)
    a.e.send(b.root.fid, b"and back", w.now)
    w.run_until(lambda: len(b.got) == b_got + 1)
    assert b.got[-1].content == b"and back"
