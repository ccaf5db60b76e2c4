"""Bad input from a peer: rejected and logged, the contract carries on unharmed.

The entries here are written by hand with the peer's own keys, as a buggy or hostile
implementation could: they are perfectly valid log entries whose content is wrong.
"""

from __future__ import annotations

import logging

import pytest

from gateway.isp.messages import FeedhoppingNext, FeedhoppingPrev, Message, decode_message
from gateway.wire import bipf
from gateway.wire.entry import (
    PACKET_LEN,
    TYPE_CHAIN20,
    FeedKey,
    build_chain20,
    dmx_of_name,
    entry_name,
)

from .world import Peer, World, onboard, star, subscribe


@pytest.fixture
def w() -> World:
    world = star(2)
    onboard(world, "c0")
    onboard(world, "c1")
    subscribe(world, "c0", "c1")
    return world


def write(w: World, p: Peer, fid: bytes, content: bytes) -> None:
    """Append ``content`` to ``p``'s contract feed ``fid``, bypassing its engine."""
    key = p.keys.get(fid)
    assert key is not None
    p.node.publish(key, content, w.now, announce=False)
    w.pump()


def isp_contract(w: World, client: str):  # type: ignore[no-untyped-def]
    (x,) = [x for x in w.peers["isp"].e.contracts() if x.peer == w.peers[client].root.fid]
    return x


def exchange_works(w: World, n: int = 3) -> None:
    """The contract still carries messages both ways, in order."""
    a, b = w.peers["c0"], w.peers["c1"]
    before_a, before_b = len(a.got), len(b.got)
    for k in range(n):
        a.e.send(b.root.fid, f"still fine {k}".encode() * 5, w.now)
        b.e.send(a.root.fid, f"also fine {k}".encode(), w.now)
    w.run_until(lambda: len(b.got) == before_b + n and len(a.got) == before_a + n)
    assert [m.content for m in b.got[before_b:]] == [f"still fine {k}".encode() * 5
                                                    for k in range(n)]


def logged(caplog: pytest.LogCaptureFixture, text: str, level: int = logging.WARNING) -> bool:
    return any(text in r.getMessage() and r.levelno >= level for r in caplog.records)


@pytest.mark.parametrize("content,why", [
    (bipf.encode(["ISP", "sub_req_isp", b"short", 5, None]), "bad message"),
    (bipf.encode(["ISP", "onboard_ack", "not bytes"]), "bad message"),
    (bipf.encode(["ISP", "no_such_type"]), "bad message"),
    (bipf.encode(["ISP", "sub_req", bytes(32), bytes(32)]), "does not belong here"),
    (b"plain text, no ISP list", "not a tinyISP message"),
], ids=["wrong-types", "string-for-fid", "unknown-type", "client-message", "no-isp-list"])
def test_wrong_messages_on_the_isp_control_feed(w: World, caplog: pytest.LogCaptureFixture,
                                                content: bytes, why: str) -> None:
    a, i = w.peers["c0"], w.peers["isp"]
    (before,) = a.e.contracts()
    caplog.set_level(logging.INFO)
    write(w, i, isp_contract(w, "c0").ctrl_out, content)
    w.run_until(lambda: logged(caplog, why))
    (after,) = a.e.contracts()
    assert after.state == "established" and after.data_in == before.data_in
    exchange_works(w)


def test_unknown_refs_are_ignored(w: World, caplog: pytest.LogCaptureFixture) -> None:
    a, b, i = w.peers["c0"], w.peers["c1"], w.peers["isp"]
    caplog.set_level(logging.INFO)
    unknown = bytes(range(20))
    write(w, i, isp_contract(w, "c0").ctrl_out,
          bipf.encode(["ISP", "sub_resp_isp", unknown, True, bytes(32)]))
    (bc,) = b.e.contracts()
    write(w, b, bc.ctrl_out, bipf.encode(["ISP", "sub_resp", unknown, True, bytes(32)]))
    write(w, i, isp_contract(w, "c0").ctrl_out, bipf.encode(["ISP", "feedhopping_fin", bytes(32)]))
    w.run_until(lambda: logged(caplog, "we do not wait for", logging.INFO)
                and logged(caplog, "not pending", logging.INFO)
                and logged(caplog, "not one of our unfinished data feeds", logging.INFO))
    assert len(a.e.subscriptions()) == 1 and len(b.e.subscriptions()) == 1
    assert a.e.outcome(unknown) is None
    exchange_works(w)


def test_next_at_the_wrong_sequence_is_ignored(w: World,
                                               caplog: pytest.LogCaptureFixture) -> None:
    a, i = w.peers["c0"], w.peers["isp"]
    (info,) = a.e.contracts()
    data = info.data_out[-1]
    before = isp_contract(w, "c0").data_in
    elsewhere = FeedKey.from_seed(b"\x07" * 32).fid
    write(w, a, data, FeedhoppingNext(elsewhere).encode())
    write(w, a, data, FeedhoppingNext(data).encode())
    write(w, a, data, FeedhoppingPrev(elsewhere).encode())
    w.run_until(lambda: logged(caplog, "a hop is only valid at seq 50")
                and logged(caplog, "does not belong in a data feed"))
    assert isp_contract(w, "c0").data_in == before  # no hop
    assert not i.e.contracts()[0].paused
    exchange_works(w, 60)  # and the real hop at seq 50 still works
    assert isp_contract(w, "c0").data_in != before


def test_a_forged_c2c_entry_inside_a_data_feed(w: World,
                                               caplog: pytest.LogCaptureFixture) -> None:
    """The ISP slips an entry of its own making into c0's c2c feed: the signature is not
    c0's, so c1 drops it and still gets c0's real messages."""
    b, i = w.peers["c1"], w.peers["isp"]
    exchange_works(w, 2)
    (sub,) = b.e.subscriptions()
    replica = b.node.store.replica(sub.peer_c2c)
    name = entry_name(sub.peer_c2c, replica.max_seq + 1, replica.prev)
    payload, chunks = build_chain20(b"a message c0 never wrote " * 4)
    signed = dmx_of_name(name) + bytes([TYPE_CHAIN20]) + payload
    evil = FeedKey.from_seed(b"\x66" * 32)
    packet = signed + evil.sign(name + signed)
    wire = packet + b"".join(chunks)
    towards_b = isp_contract(w, "c1").data_out[-1]
    write(w, i, towards_b, wire)
    w.run_until(lambda: logged(caplog, "does not verify"))
    assert all(b"never wrote" not in m.content for m in b.got)
    exchange_works(w)


def test_a_damaged_side_chain_is_repaired_by_the_genuine_copy(
        w: World, caplog: pytest.LogCaptureFixture) -> None:
    a, b, i = w.peers["c0"], w.peers["c1"], w.peers["isp"]
    (sub,) = a.e.subscriptions()
    text = b"a long message that needs a side chain " * 5
    a.e.send(b.root.fid, text, w.now)
    seq = a.node.store.replica(sub.own_c2c).max_seq
    wire = a.node.store.read_packet(sub.own_c2c, seq) or b""
    chunk = bytearray(a.node.store.read_chunk(sub.own_c2c, seq, 0) or b"")
    chunk[5] ^= 0xFF
    rest = b""
    cnr = 1
    while (c := a.node.store.read_chunk(sub.own_c2c, seq, cnr)) is not None:
        rest += c
        cnr += 1
    # the ISP (before it got c0's copy) passes on the entry with a damaged first chunk
    write(w, i, isp_contract(w, "c1").data_out[-1], wire + bytes(chunk) + rest)
    w.run_until(lambda: logged(caplog, "broken side chain"))
    w.run_until(lambda: any(m.content == text for m in b.got))
    assert [m.content for m in b.got].count(text) == 1
    exchange_works(w)


def test_a_wire_of_the_wrong_length(w: World, caplog: pytest.LogCaptureFixture) -> None:
    i = w.peers["isp"]
    write(w, i, isp_contract(w, "c1").data_out[-1], b"\x01" * (PACKET_LEN + 7))
    write(w, i, isp_contract(w, "c1").data_out[-1], b"\x01" * (PACKET_LEN * 3))
    w.run_until(lambda: sum("neither a message nor a wire" in r.getMessage()
                            for r in caplog.records) == 2)
    exchange_works(w)


def test_bad_onboard_requests_on_a_root_feed(caplog: pytest.LogCaptureFixture) -> None:
    w = star(1)
    c, i = w.peers["c0"], w.peers["isp"]
    caplog.set_level(logging.INFO)
    i.e.follow(c.root.fid, w.now)
    c.node.publish(c.root, bipf.encode(["ISP", "onboard_request", 7, b"x"]), w.now)
    other_isp = FeedKey.from_seed(b"\x09" * 32).fid
    c.node.publish(c.root, bipf.encode(["ISP", "onboard_request", other_isp, bytes(32)]),
                   w.now)
    w.pump()
    w.run_until(lambda: logged(caplog, "bad message", logging.INFO))
    w.run_for(10.0)
    assert i.e.contracts() == []
    onboard(w, "c0")  # a good request afterwards is served


def test_a_replayed_sub_req_is_not_forwarded_again(w: World,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    """Issue 14 case 9: the same sub_req again (a client that re-sends it, or a copy of
    the entry) for a subscription the ISP holds already is idempotent at the ISP."""
    a, b = w.peers["c0"], w.peers["c1"]
    (sub,) = a.e.subscriptions()
    (ac,) = a.e.contracts()
    caplog.set_level(logging.INFO)
    write(w, a, ac.ctrl_out, bipf.encode(["ISP", "sub_req", b.root.fid, sub.own_c2c]))
    w.run_until(lambda: logged(caplog, "asked again", logging.INFO))
    w.run_for(30.0)
    assert b.e.requests() == []  # (before: a new pending request at the other client)
    assert len(a.e.subscriptions()) == 1 and len(b.e.subscriptions()) == 1
    exchange_works(w)


# --- replayed control entries (issue 14, case 9, beyond sub_req) ---------------------------
# A replay is an entry whose content the client wrote before, written again (a client
# that re-sends it, or a copy of the entry): the ISP acts on it once.

def kinds(p: Peer, fid: bytes) -> list[str]:
    """The tinyISP message types written to ``fid`` as ``p`` holds it, in order."""
    out = []
    for seq in range(1, p.store.replica(fid).max_seq + 1):
        content = p.store.read_content(fid, seq)
        msg = decode_message(content) if content is not None else None
        out.append(msg.kind if msg is not None else "-")
    return out


def replay(w: World, p: Peer, fid: bytes, kind: str) -> Message:
    """Write ``p``'s first ``kind`` message on its feed ``fid`` again."""
    for seq in range(1, p.store.replica(fid).max_seq + 1):
        content = p.store.read_content(fid, seq)
        msg = decode_message(content) if content is not None else None
        if msg is not None and msg.kind == kind:
            write(w, p, fid, content)
            return msg
    raise AssertionError(f"no {kind} on {fid.hex()[:8]}")


def test_a_replayed_onboard_ack_is_not_answered_again(w: World) -> None:
    a = w.peers["c0"]
    (ac,) = a.e.contracts()
    to_a = isp_contract(w, "c0").ctrl_out
    before = kinds(w.peers["isp"], to_a)
    assert before.count("onboard_ack") == 1
    replay(w, a, ac.ctrl_out, "onboard_ack")
    w.run_for(30.0)
    assert kinds(w.peers["isp"], to_a) == before  # no second onboard_ack, nothing else
    assert isp_contract(w, "c0").state == "established"
    exchange_works(w)


def test_a_replayed_acceptance_is_not_passed_on_again(w: World,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    a, b = w.peers["c0"], w.peers["c1"]
    (bc,) = b.e.contracts()
    to_a = isp_contract(w, "c0").ctrl_out
    before = kinds(w.peers["isp"], to_a)
    assert before.count("sub_resp_isp") == 1
    caplog.set_level(logging.INFO)
    replay(w, b, bc.ctrl_out, "sub_resp")
    w.run_until(lambda: logged(caplog, "not pending", logging.INFO))
    w.run_for(30.0)
    assert kinds(w.peers["isp"], to_a) == before  # a hears of the acceptance once
    assert len(a.e.subscriptions()) == 1 and len(b.e.subscriptions()) == 1
    exchange_works(w)


def test_a_replayed_rejection_and_the_rejected_request_have_no_second_effect(
        caplog: pytest.LogCaptureFixture) -> None:
    w = star(3)
    for name in ("c0", "c1", "c2"):
        onboard(w, name)
    a, c = w.peers["c0"], w.peers["c2"]
    ref = c.e.subscribe(a.root.fid, w.now)
    w.pump()
    w.run_until(lambda: any(r.ref == ref for r in a.e.requests()))
    a.e.reject(ref, w.now)
    w.pump()
    w.run_until(lambda: c.e.outcome(ref) == "rejected")
    to_c, to_a = isp_contract(w, "c2").ctrl_out, isp_contract(w, "c0").ctrl_out
    before_c, before_a = kinds(w.peers["isp"], to_c), kinds(w.peers["isp"], to_a)
    assert before_c.count("sub_resp_isp") == 1 and before_a.count("sub_req_isp") == 1
    caplog.set_level(logging.INFO)
    (ac,) = a.e.contracts()
    replay(w, a, ac.ctrl_out, "sub_resp")  # the rejection again
    (cc,) = c.e.contracts()
    replay(w, c, cc.ctrl_out, "sub_req")  # and the request it rejected
    w.run_for(30.0)
    assert kinds(w.peers["isp"], to_c) == before_c  # c hears "rejected" once
    assert kinds(w.peers["isp"], to_a) == before_a  # a is not asked again
    assert a.e.requests() == [] and c.e.outcome(ref) == "rejected"
    assert a.e.subscriptions() == [] and c.e.subscriptions() == []
    # a request of its own (a new c2c feed) is a new request, forwarded as usual
    subscribe(w, "c2", "c0")


def test_a_replayed_farewell_init_is_acknowledged_once(w: World,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    a, i = w.peers["c0"], w.peers["isp"]
    (ac,) = a.e.contracts()
    to_a = isp_contract(w, "c0").ctrl_out
    caplog.set_level(logging.INFO)
    a.e.leave(w.now)
    w.pump()
    w.run_until(lambda: "farewell_ack" in kinds(i, to_a))
    replay(w, a, ac.ctrl_out, "farewell_init")
    w.run_until(lambda: logged(caplog, "farewell_init in phase", logging.INFO))
    seen = kinds(i, to_a)
    assert seen.count("farewell_ack") == 1 and seen.count("farewell_init") == 0
    w.run_until(lambda: a.e.contracts() == [] and len(i.e.contracts()) == 1)
    assert (ac.id, "terminated") in a.e.ended() and (ac.id, "terminated") in i.e.ended()


def test_a_request_that_found_nobody_may_be_sent_again() -> None:
    """No one was asked: the same sub_req once the peer is a client reaches it."""
    w = star(2)
    onboard(w, "c1")
    a, b = w.peers["c0"], w.peers["c1"]
    ref = b.e.subscribe(a.root.fid, w.now)
    w.pump()
    w.run_until(lambda: b.e.outcome(ref) == "not_found")
    onboard(w, "c0")
    (bc,) = b.e.contracts()
    replay(w, b, bc.ctrl_out, "sub_req")
    w.run_until(lambda: [r.requester for r in a.e.requests()] == [b.root.fid])
