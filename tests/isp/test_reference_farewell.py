"""Farewells with the reference tinyISP ISP (issue 15, item 5; tinyisp.md section 2.4).

The reference ISP misbehaves in two ways, both reproduced here by an ISP side that does
what it does:

* Reading a client's end of data (``feedhopping_next(None)``) before its
  ``farewell_init``, it writes ``farewell_fin`` without its own end of data and then
  ignores the init (no longer established): a client that wrote both at once waited
  for ever. Ours writes the init first and its end of data once the ISP acked.
* Starting a farewell itself, it sleeps in its receive callback and deletes its control
  feed: its ``farewell_fin`` never goes out. Our client ends the contract on its own
  after ``farewell_timeout`` of silence, and says so.
"""

from __future__ import annotations

import logging

import pytest

from gateway.cli_isp import _print_contracts
from gateway.isp import ContractParams
from gateway.isp.isp import IspSide
from gateway.isp.messages import FarewellFin
from gateway.isp.model import Contract, Phase

from ..replication.mesh import Fate, ideal
from .world import Peer, World, onboard, phase, star

TIMEOUT = ContractParams(farewell_delay=2.0, farewell_timeout=120.0)


class Reference(IspSide):
    """The reference ISP writes its farewell_init and its end of data at once."""

    def begin_farewell(self, c: Contract, *, initiator: bool) -> bool:
        began = super().begin_farewell(c, initiator=initiator)
        self._release_end(c)
        return began


class ReferenceFin(Reference):
    """The reference ISP reading a client's end of data: fin, no end of its own."""

    def on_peer_end(self, c: Contract) -> None:
        if not c.fin_sent:
            self.ctx.send(c.own_ctrl, FarewellFin())
            c.fin_sent = True
        c.phase = Phase.FAREWELL_FIN
        self._maybe_terminate(c)


class ReferenceVanishes(Reference):
    """The reference ISP ending a farewell it started: it deletes its feeds at once,
    its fin never written."""

    def on_peer_end(self, c: Contract) -> None:
        self.terminate(c, "terminated")


def as_reference(isp: Peer, side: type[IspSide]) -> None:
    engine = isp.e
    engine._isp = engine._side = side(engine._ctx)  # type: ignore[attr-defined]


def contract_feeds(peer: Peer) -> set[bytes]:
    (c,) = peer.e.contracts()
    return {c.ctrl_out, *c.data_out} | ({c.ctrl_in} if c.ctrl_in else set())


def test_a_client_farewell_completes_when_the_isp_reads_data_first() -> None:
    w = star(1, params=TIMEOUT)
    a, i = w.peers["c0"], w.peers["isp"]
    cid = onboard(w, "c0")
    as_reference(i, ReferenceFin)
    (info,) = a.e.contracts()
    init_dmx = a.node.store.replica(info.ctrl_out).next_dmx()  # of its farewell_init
    a.e.leave(w.now)
    w.pump()
    # the ISP's request round asks for the data set first: the client's control entry
    # (its farewell_init) reaches the ISP only after 30 s, or once the ISP has read the
    # client's end of data
    start = w.now

    def data_first(n: int, src: str, dst: str, frame: bytes) -> Fate:
        held = (src == "c0" and frame[:7] == init_dmx and w.now < start + 30.0
                and not _read_end(i, cid))
        return Fate(drop=True) if held else ideal(n, src, dst, frame)

    w.mesh.fate = data_first
    w.run_until(lambda: not a.e.contracts() and phase(i, cid) is None, limit=100)
    assert a.e.outcome(cid) == i.e.outcome(cid) == "terminated"
    assert not a.keys.fids()


def _read_end(isp: Peer, cid: bytes) -> bool:
    c = isp.e._ctx.state.contracts.get(cid)  # type: ignore[attr-defined]
    return c is None or c.reader.ended


def test_an_isp_farewell_whose_fin_never_comes_times_out(caplog: pytest.LogCaptureFixture) -> None:
    w = star(1, params=TIMEOUT)
    a, i = w.peers["c0"], w.peers["isp"]
    cid = onboard(w, "c0")
    as_reference(i, ReferenceVanishes)
    feeds = contract_feeds(a)
    i.e.farewell(a.root.fid, w.now)
    w.pump()
    # the ISP is gone, its fin never written; we read its end of data and wrote ours
    w.run_until(lambda: phase(a, cid) == "farewell_fin" and phase(i, cid) is None, limit=60)
    t0 = w.now
    with caplog.at_level(logging.WARNING, logger="gateway.isp.side"):
        w.run_until(lambda: not a.e.contracts(), limit=TIMEOUT.farewell_timeout + 30)
    assert w.now - t0 >= TIMEOUT.farewell_timeout - 5  # silence since the ISP's last entry
    assert a.e.outcome(cid) == "farewell timed out"
    assert (cid, "farewell timed out") in a.e.ended()
    assert "farewell unanswered (no farewell_fin)" in caplog.text
    assert not a.keys.fids() and not feeds & set(a.node.store.feeds())


def test_a_client_farewell_to_a_silent_isp_times_out() -> None:
    w = star(1, params=TIMEOUT)
    a, i = w.peers["c0"], w.peers["isp"]
    cid = onboard(w, "c0")
    w.mesh.unlink("isp", "c0")  # the ISP is gone for good
    a.e.leave(w.now)
    w.pump()
    (info,) = a.e.contracts()
    assert info.state == "farewell" and info.queued == 0  # end of data held for the ack
    w.run_until(lambda: not a.e.contracts(), limit=TIMEOUT.farewell_timeout + 30)
    assert a.e.outcome(cid) == "farewell timed out"
    assert phase(i, cid) == "established"


def test_a_peer_that_keeps_talking_is_not_timed_out() -> None:
    """Silence is what counts: a farewell whose peer still moves goes on."""
    w: World = star(1, params=TIMEOUT)
    a, i = w.peers["c0"], w.peers["isp"]
    cid = onboard(w, "c0")
    a.e.leave(w.now)
    w.pump()
    w.run_until(lambda: not a.e.contracts() and phase(i, cid) is None, limit=120)
    assert a.e.outcome(cid) == i.e.outcome(cid) == "terminated"


def test_tinyssb_isp_contracts_lists_how_contracts_ended(capsys: pytest.CaptureFixture[str]) -> None:
    _print_contracts({"role": "client", "contracts": [], "allow": [],
                      "ended": [{"id": "ab" * 20, "outcome": "farewell timed out"}]})
    assert capsys.readouterr().out.splitlines() == [
        "no contracts", f"ended contract {'ab' * 20}: farewell timed out"]
