"""tinyISP end to end: an ISP and clients as in-memory nodes under virtual time."""

from __future__ import annotations

import hashlib

import pytest

from gateway.isp import ContractParams, IspError
from gateway.isp.messages import (
    FeedhoppingFin,
    FeedhoppingPrev,
    OnboardAck,
    ctrl_set_name,
    data_set_name,
    decode_message,
)
from gateway.isp.views import AskedSubscription
from gateway.wire import bipf
from gateway.wire.entry import genesis_prev
from gateway.wire.goset import xor_keys

from .world import Peer, onboard, phase, star, subscribe


def messages_of(peer: Peer, fid: bytes) -> list[object]:
    store = peer.node.store
    return [decode_message(store.read_content(fid, s) or b"")
            for s in range(1, store.replica(fid).max_seq + 1)]


def texts(n: int, tag: str) -> list[bytes]:
    """``n`` messages; every third one long enough to need side-chain chunks."""
    out = []
    for i in range(n):
        body = f"{tag} {i:04d} "
        out.append((body * (12 + i % 25)).encode() if i % 3 == 0 else body.encode())
    return out


# --- onboarding ---------------------------------------------------------------------------

def test_onboarding_accepted() -> None:
    w = star(1)
    c, i = w.peers["c0"], w.peers["isp"]
    cid = onboard(w, "c0")
    # the contract id is the message id of the request: sha256(name | packet)[:20]
    packet = c.node.store.read_packet(c.root.fid, 2)
    assert packet is not None
    prev = _mid(c, c.root.fid, 1)
    name = b"tinyssb-v0" + c.root.fid + (2).to_bytes(4, "big") + prev
    assert cid == hashlib.sha256(name + packet).digest()[:20]
    (ci,), (ii,) = c.e.contracts(), i.e.contracts()
    assert ci.id == ii.id == cid
    assert ci.ctrl_out == ii.ctrl_in and ci.ctrl_in == ii.ctrl_out
    assert ci.data_out[0] == ii.data_in and ci.data_in == ii.data_out[0]
    # both sides hold the same ctrl and data sets, under the reference names
    for p in (c, i):
        sets = p.node.sets
        assert sets[ctrl_set_name(c.root.fid, cid)] == sorted([ci.ctrl_out, ci.ctrl_in])
        assert sets[data_set_name(c.root.fid, cid)] == sorted([ci.data_out[0], ci.data_in])
    # each first data feed starts with prev(None); each side announced it in onboard_ack
    assert messages_of(c, ci.data_out[0]) == [FeedhoppingPrev(None)]
    assert messages_of(i, ii.data_out[0]) == [FeedhoppingPrev(None)]
    assert messages_of(i, ci.ctrl_out) == [OnboardAck(ci.data_out[0])]
    assert messages_of(c, ii.ctrl_out) == [OnboardAck(ii.data_out[0])]
    # contract feeds never join the global GOSET
    contract_feeds = {ci.ctrl_out, ci.ctrl_in, ci.data_out[0], ci.data_in}
    assert not contract_feeds & set(c.node.goset.keys)
    assert not contract_feeds & set(i.node.goset.keys)


def _mid(peer: Peer, fid: bytes, seq: int) -> bytes:
    prev = genesis_prev(fid)
    for s in range(1, seq + 1):
        packet = peer.node.store.read_packet(fid, s) or b""
        name = b"tinyssb-v0" + fid + s.to_bytes(4, "big") + prev
        prev = hashlib.sha256(name + packet).digest()[:20]
    return prev


def test_want_dmx_of_a_contract_set_is_the_xor_rule() -> None:
    w = star(1)
    c = w.peers["c0"]
    cid = onboard(w, "c0")
    (info,) = c.e.contracts()
    keys = sorted([info.ctrl_out, info.ctrl_in or b""])
    expect = hashlib.sha256(b"tinyssb-v0" + b"want" + xor_keys(keys)).digest()[:7]
    assert c.node._sets[ctrl_set_name(c.root.fid, cid)].want_dmx == expect


def test_onboarding_rejected_by_the_allow_list_which_persists() -> None:
    w = star(2)
    c0, c1, i = w.peers["c0"], w.peers["c1"], w.peers["isp"]
    i.e.allow(c1.root.fid)
    w.restart("isp")
    assert i.e.allow_list == [c1.root.fid]
    i.e.follow(c0.root.fid, w.now)
    cid = c0.e.onboard(i.root.fid, w.now)
    w.run_until(lambda: c0.e.outcome(cid) == "rejected")
    assert c0.e.contracts() == [] and i.e.contracts() == []
    assert c0.keys.fids() == []  # the control feed's key is gone with the feed
    assert i.e.outcome(cid) == "rejected"
    onboard(w, "c1")
    i.e.allow(c0.root.fid)
    cid2 = onboard(w, "c0")
    assert cid2 != cid and phase(i, cid2) == "established"
    i.e.disallow(c0.root.fid)
    assert i.e.allow_list == [c1.root.fid]


def test_onboarding_twice_is_refused_by_the_client_and_by_the_isp() -> None:
    w = star(1)
    c, i = w.peers["c0"], w.peers["isp"]
    cid = onboard(w, "c0")
    with pytest.raises(IspError, match="leave it first"):
        c.e.onboard(i.root.fid, w.now)
    # a second request written by hand: the ISP refuses a client with a contract
    (info,) = c.e.contracts()
    raw = bipf.encode(["ISP", "onboard_request", i.root.fid, info.ctrl_out])
    entry = c.node.publish(c.root, raw, w.now)
    w.pump()
    w.run_until(lambda: i.e.outcome(entry.msg_id) == "rejected")
    assert phase(i, cid) == "established" and len(i.e.contracts()) == 1


def test_kotlin_two_argument_rejection_is_understood() -> None:
    w = star(1)
    c, i = w.peers["c0"], w.peers["isp"]  # the ISP does not follow c0: it will not answer
    cid = c.e.onboard(i.root.fid, w.now)
    w.pump()
    i.node.publish(i.root, bipf.encode(["ISP", "onboard_response", cid, False]), w.now)
    w.pump()
    w.run_until(lambda: c.e.outcome(cid) == "rejected")
    assert c.e.contracts() == []


def test_leave_before_the_answer_abandons() -> None:
    w = star(1)
    c, i = w.peers["c0"], w.peers["isp"]
    cid = c.e.onboard(i.root.fid, w.now)
    c.e.leave(w.now)
    assert c.e.contracts() == [] and c.e.outcome(cid) == "abandoned"
    with pytest.raises(IspError, match="no ISP contract"):
        c.e.leave(w.now)


def test_role_mismatch_is_one_clear_error() -> None:
    w = star(1)
    with pytest.raises(IspError, match="client operation"):
        w.peers["isp"].e.onboard(w.peers["c0"].root.fid, w.now)
    with pytest.raises(IspError, match="ISP operation"):
        w.peers["c0"].e.follow(w.peers["isp"].root.fid, w.now)
    with pytest.raises(IspError, match="onboard with an ISP first"):
        w.peers["c0"].e.subscribe(w.peers["isp"].root.fid, w.now)


# --- subscriptions ------------------------------------------------------------------------

def test_subscription_accepted() -> None:
    w = star(2)
    onboard(w, "c0")
    onboard(w, "c1")
    a, b, i = w.peers["c0"], w.peers["c1"], w.peers["isp"]
    ref = subscribe(w, "c0", "c1")
    (sa,), (sb,) = a.e.subscriptions(), b.e.subscriptions()
    assert sa.ref == sb.ref == ref
    assert sa.peer == b.root.fid and sb.peer == a.root.fid
    assert sa.own_c2c == sb.peer_c2c and sb.own_c2c == sa.peer_c2c
    (ia, ib) = sorted(i.e.contracts(), key=lambda x: x.peer != a.root.fid)
    assert ia.subscriptions == (b.root.fid,) and ib.subscriptions == (a.root.fid,)
    # c2c feeds travel in no set
    for p in (a, b, i):
        in_sets = {k for keys in p.node.sets.values() for k in keys} | set(p.node.goset.keys)
        assert sa.own_c2c not in in_sets and sb.own_c2c not in in_sets
    a.e.send(b.root.fid, b"hello b", w.now)
    b.e.send(a.root.fid, b"hello a" * 30, w.now)
    w.run_until(lambda: len(a.got) == 1 and len(b.got) == 1)
    assert b.got[0].content == b"hello b" and a.got[0].content == b"hello a" * 30
    assert [m.content for m in b.e.inbox(a.root.fid)] == [b"hello b"]
    with pytest.raises(IspError, match="already subscribed"):
        a.e.subscribe(b.root.fid, w.now)


def test_subscription_rejected() -> None:
    w = star(2)
    onboard(w, "c0")
    onboard(w, "c1")
    a, b, i = w.peers["c0"], w.peers["c1"], w.peers["isp"]
    ref = a.e.subscribe(b.root.fid, w.now)
    w.run_until(lambda: bool(b.e.requests()))
    assert b.e.requests()[0].requester == a.root.fid
    b.e.reject(ref, w.now)
    w.run_until(lambda: a.e.outcome(ref) == "rejected")
    assert a.e.subscriptions() == [] and b.e.subscriptions() == [] and b.e.requests() == []
    assert i.e.outcome(ref) == "rejected"
    assert all(not info.subscriptions and not info.pending for info in i.e.contracts())
    with pytest.raises(IspError, match="no accepted subscription"):
        a.e.send(b.root.fid, b"x", w.now)
    with pytest.raises(IspError, match="no subscription request"):
        b.e.accept(ref, w.now)


def test_subscription_not_found() -> None:
    w = star(2)
    onboard(w, "c0")
    a, b = w.peers["c0"], w.peers["c1"]  # c1 is no client of the ISP
    ref = a.e.subscribe(b.root.fid, w.now)
    assert a.e.asked() == [AskedSubscription(ref, b.root.fid, "pending")]
    w.run_until(lambda: a.e.outcome(ref) == "not_found")
    assert a.e.subscriptions() == [] and a.e.contracts()[0].pending == ()
    # `tinyssb isp requests` shows the refusal (and says to ask again once c1 onboarded)
    assert a.e.asked() == [AskedSubscription(ref, b.root.fid, "not_found")]
    onboard(w, "c1")
    again = a.e.subscribe(b.root.fid, w.now)
    assert a.e.asked() == [AskedSubscription(again, b.root.fid, "pending")]
    w.run_until(lambda: bool(b.e.requests()))
    b.e.accept(again, w.now)
    w.run_until(lambda: bool(a.e.subscriptions()))
    assert a.e.asked() == []


def test_refusal_without_a_reason_is_understood() -> None:
    w = star(2)
    onboard(w, "c0")
    onboard(w, "c1")
    a, b, i = w.peers["c0"], w.peers["c1"], w.peers["isp"]
    ref = a.e.subscribe(b.root.fid, w.now)
    # before the ISP has even seen the request, a refusal without a reason arrives
    (info,) = [x for x in i.e.contracts() if x.peer == a.root.fid]
    key = i.keys.get(info.ctrl_out)
    assert key is not None
    i.node.publish(key, bipf.encode(["ISP", "sub_resp_isp", ref, False]), w.now,
                   announce=False)
    w.pump()
    w.run_until(lambda: a.e.outcome(ref) == "rejected")


# --- the data path ------------------------------------------------------------------------

def fins(peer: Peer, ctrl: bytes) -> int:
    return sum(isinstance(m, FeedhoppingFin) for m in messages_of(peer, ctrl))


def test_500_messages_each_way_exactly_once_in_order_over_many_hops() -> None:
    w = star(2, params=ContractParams(farewell_delay=2.0))
    onboard(w, "c0")
    onboard(w, "c1")
    a, b, i = w.peers["c0"], w.peers["c1"], w.peers["isp"]
    subscribe(w, "c0", "c1")
    to_b, to_a = texts(500, "a->b"), texts(500, "b->a")
    assert sum(len(t) > 28 for t in to_b) >= 160
    for n in range(500):
        a.e.send(b.root.fid, to_b[n], w.now)
        b.e.send(a.root.fid, to_a[n], w.now)
        if n % 50 == 49:
            w.run_for(1.0)
    w.run_until(lambda: len(a.got) >= 500 and len(b.got) >= 500, limit=3600)
    w.run_for(5.0)
    assert [m.content for m in b.got] == to_b and [m.seq for m in b.got] == list(range(1, 501))
    assert [m.content for m in a.got] == to_a
    assert [m.content for m in b.e.inbox()] == to_b
    # at least 5 hops in each direction on both client-ISP links, every old feed deleted
    for client in (a, b):
        (ci,) = client.e.contracts()
        (ii,) = [x for x in i.e.contracts() if x.id == ci.id]
        assert fins(i, ii.ctrl_out) >= 5  # the ISP read >= 5 full data feeds of the client
        assert fins(client, ci.ctrl_out) >= 5  # and the client >= 5 of the ISP's
        assert len(ci.data_out) == 1 and len(ii.data_out) == 1
        own = {ci.ctrl_out, ci.ctrl_in, ci.data_in, *ci.data_out}
        sub = client.e.subscriptions()[0]
        held = set(client.node.store.feeds())
        assert held == own | {sub.own_c2c, sub.peer_c2c} | {p.root.fid for p in w.peers.values()}


def test_flow_control_pauses_and_resumes() -> None:
    params = ContractParams(farewell_delay=2.0, max_feeds=3)
    w = star(2, params=params)
    onboard(w, "c0")
    onboard(w, "c1")
    a, b, i = w.peers["c0"], w.peers["c1"], w.peers["isp"]
    subscribe(w, "c0", "c1")
    w.mesh.unlink("isp", "c1")  # c1 cannot read the ISP's data feeds for now
    msgs = texts(250, "m")
    for m in msgs:
        a.e.send(b.root.fid, m, w.now)
    w.run_until(lambda: _info(i, b).paused, limit=600)
    w.run_for(20.0)
    towards_b = _info(i, b)
    assert towards_b.paused and len(towards_b.data_out) == 3 and towards_b.queued > 0
    assert len(b.got) == 0
    # the ISP's feeds to c1 stop at 3 x 50 entries minus the pending hop
    lengths = [i.node.store.replica(f).max_seq for f in towards_b.data_out]
    assert lengths == [50, 50, 49]
    w.mesh.link("isp", "c1")
    w.run_until(lambda: len(b.got) == 250, limit=1200)
    assert [m.content for m in b.got] == msgs
    w.run_for(10.0)
    assert not _info(i, b).paused and len(_info(i, b).data_out) == 1


def test_flow_control_of_the_client_writer() -> None:
    w = star(2, params=ContractParams(farewell_delay=2.0, max_feeds=2))
    onboard(w, "c0")
    onboard(w, "c1")
    a, b = w.peers["c0"], w.peers["c1"]
    subscribe(w, "c0", "c1")
    w.mesh.unlink("isp", "c0")
    msgs = texts(150, "n")
    for m in msgs:
        a.e.send(b.root.fid, m, w.now)
    (info,) = a.e.contracts()
    assert info.paused and len(info.data_out) == 2 and info.queued == 150 - 2 * 48
    w.mesh.link("isp", "c0")
    w.run_until(lambda: len(b.got) == 150, limit=1200)
    assert [m.content for m in b.got] == msgs


def _info(i: Peer, client: Peer):  # type: ignore[no-untyped-def]
    (x,) = [x for x in i.e.contracts() if x.peer == client.root.fid]
    return x


# --- farewell ---------------------------------------------------------------------------

@pytest.mark.parametrize("who", ["client", "isp"])
def test_farewell_delivers_pending_data_then_deletes_every_contract_feed(who: str) -> None:
    w = star(2)
    onboard(w, "c0")
    onboard(w, "c1")
    a, b, i = w.peers["c0"], w.peers["c1"], w.peers["isp"]
    subscribe(w, "c0", "c1")
    (ca,) = a.e.contracts()
    sub = a.e.subscriptions()[0]
    msgs = texts(120, "bye")
    for m in msgs:
        a.e.send(b.root.fid, m, w.now)
        b.e.send(a.root.fid, m, w.now)
    contract_feeds = {ca.ctrl_out, ca.ctrl_in, sub.own_c2c, sub.peer_c2c}
    data_feeds: set[bytes] = set()

    def watch() -> bool:
        for x in a.e.contracts() + [y for y in i.e.contracts() if y.id == ca.id]:
            data_feeds.update(x.data_out)
            if x.data_in:
                data_feeds.add(x.data_in)
        return not a.e.contracts() and phase(i, ca.id) is None

    w.run_for(0.5)  # some of it on its way
    if who == "client":
        a.e.leave(w.now)
        with pytest.raises(IspError, match="not established"):
            a.e.send(b.root.fid, b"too late", w.now)
    else:
        i.e.farewell(a.root.fid, w.now)
    w.run_until(watch, limit=1200)
    # c0 wrote all of its messages before the farewell: every one is delivered; of c1's,
    # those the ISP had queued for c0 when the farewell began arrive, in order
    assert [m.content for m in b.got] == msgs
    assert 0 < len(a.got) < len(msgs)
    assert [m.content for m in a.got] == msgs[:len(a.got)]
    assert a.e.outcome(ca.id) == i.e.outcome(ca.id) == "terminated"
    assert len(data_feeds) >= 4
    for p in (a, i):
        left = set(p.node.store.feeds())
        assert not left & (contract_feeds | data_feeds), p.name
        assert not {k for keys in p.node.sets.values() for k in keys} & contract_feeds
    assert a.keys.fids() == []
    assert set(a.node.store.feeds()) == {p.root.fid for p in w.peers.values()}
    # the ISP still serves c1 and keeps following c0's root
    assert a.root.fid in i.e.followed and [x.peer for x in i.e.contracts()] == [b.root.fid]
    # and c0 can come back
    onboard(w, "c0")


def test_farewell_when_both_sides_start_it() -> None:
    w = star(1)
    a, i = w.peers["c0"], w.peers["isp"]
    cid = onboard(w, "c0")
    a.e.leave(w.now)
    i.e.farewell(a.root.fid, w.now)
    w.run_until(lambda: not a.e.contracts() and not i.e.contracts())
    assert a.e.outcome(cid) == i.e.outcome(cid) == "terminated"
    assert a.node.sets.keys() == {k for k in a.node.sets if k.startswith("root")}


def test_farewell_of_an_onboarding_contract_is_refused() -> None:
    w = star(1)
    a, i = w.peers["c0"], w.peers["isp"]
    i.e.follow(a.root.fid, w.now)
    with pytest.raises(IspError, match="no contract"):
        i.e.farewell(a.root.fid, w.now)
    w.mesh.unlink("isp", "c0")
    cid = a.e.onboard(i.root.fid, w.now)
    w.mesh.link("isp", "c0")
    w.run_until(lambda: phase(i, cid) == "onboarding")
    w.mesh.unlink("isp", "c0")
    w.run_for(5.0)
    assert phase(i, cid) == "onboarding"
    with pytest.raises(IspError, match="still onboarding"):
        i.e.farewell(a.root.fid, w.now)


def test_farewell_while_the_writer_is_paused() -> None:
    """The end marker waits behind the data the writer holds back: all of it arrives."""
    w = star(2, params=ContractParams(farewell_delay=2.0, max_feeds=2))
    onboard(w, "c0")
    cid = onboard(w, "c1")
    a, b, i = w.peers["c0"], w.peers["c1"], w.peers["isp"]
    subscribe(w, "c0", "c1")
    w.mesh.unlink("isp", "c1")
    msgs = texts(150, "p")
    for m in msgs:
        a.e.send(b.root.fid, m, w.now)
    w.run_until(lambda: _info(i, b).queued == 150 - 2 * 48, limit=600)
    assert _info(i, b).paused
    i.e.farewell(b.root.fid, w.now)
    # the end marker is not queued before c1 shows it read our farewell_init
    assert _info(i, b).state == "farewell" and _info(i, b).queued == 150 - 2 * 48
    w.run_for(10.0)
    w.mesh.link("isp", "c1")
    w.run_until(lambda: phase(i, cid) is None and not b.e.contracts(), limit=1200)
    assert [m.content for m in b.got] == msgs
