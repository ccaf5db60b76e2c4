"""What the ISP and the client have in common: reading control feeds, the data path,
the farewell, and the bound sets of every contract.

The engine is pull-based: whatever the Node reports, :meth:`Side.settle` reads every feed
the state follows from where it stopped, as far as entries are complete, and writes what
follows from them, until nothing moves. Handlers therefore see each entry once, in
order, and a restart simply carries on from the saved cursors. Handlers that write an
answer first look whether an earlier run wrote it already (a restart between appending
and saving replays them).
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Iterator

from . import datapath, tunnel
from .context import Ctx, fid_s
from .messages import (
    FarewellAck,
    FarewellFin,
    FarewellInit,
    FeedhoppingFin,
    FeedhoppingPrev,
    Message,
    MessageError,
    OnboardAck,
    ctrl_set_name,
    data_set_name,
    decode_message,
)
from .model import Contract, Cursor, EngineState, Phase, Writer

__all__ = ["Side"]

log = logging.getLogger(__name__)

_SETTLE_ROUNDS = 64
_OPEN = (Phase.ESTABLISHED, Phase.ONBOARD_ACK)
_ENDING = (Phase.FAREWELL, Phase.FAREWELL_FIN)


class Side(ABC):
    """Base of :class:`~gateway.isp.client.ClientSide` and :class:`~gateway.isp.isp.IspSide`."""

    def __init__(self, ctx: Ctx) -> None:
        self.ctx = ctx

    @property
    def state(self) -> EngineState:
        return self.ctx.state

    # --- what each role provides -----------------------------------------------------
    @abstractmethod
    def held_feeds(self) -> set[bytes]:
        """The c2c feeds to hold a replica of (outside every set)."""

    @abstractmethod
    def on_root(self, root: bytes, mid: bytes, msg: Message) -> None:
        """A tinyISP message on a root feed we read (``mid``: its message id)."""

    @abstractmethod
    def on_ctrl(self, c: Contract, msg: Message, mid: bytes) -> bool:
        """A role-specific message on the peer's control feed; False: not one of ours."""

    @abstractmethod
    def c2c_in(self, c: Contract) -> list[bytes]:
        """The c2c feeds whose entries the peer of ``c`` tunnels to us."""

    @abstractmethod
    def pump_c2c(self) -> bool:
        """Deliver, tunnel or forward the c2c entries that became complete."""

    @abstractmethod
    def release_c2c(self, c: Contract) -> None:
        """``c`` ends: give up the c2c feeds that go with it."""

    @abstractmethod
    def root_sets(self) -> dict[str, frozenset[bytes]]:
        """The root sets {client root, ISP root} we replicate, by name."""

    def before_close(self, c: Contract) -> None:
        """Right before the end-of-data marker is queued."""

    def collect(self) -> None:
        """After settling: delete what is no longer referred to."""

    # --- the loop --------------------------------------------------------------------
    def settle(self) -> None:
        for _ in range(_SETTLE_ROUNDS):
            moved = self.pump_roots()
            for c in list(self.state.contracts.values()):
                if c.cid in self.state.contracts and self.pump_ctrl(c):
                    moved = True
                    self._heard(c)
            for c in list(self.state.contracts.values()):
                if c.cid in self.state.contracts and self.pump_data(c):
                    moved = True
                    self._heard(c)
            moved |= self.pump_c2c()
            for c in list(self.state.contracts.values()):
                if c.cid in self.state.contracts:
                    moved |= datapath.flush(self.ctx, c)
            if not moved:
                break
        else:
            log.warning("%s: tinyISP still busy after %d rounds; continuing later",
                        self.ctx.node.name, _SETTLE_ROUNDS)
        self.terminate_due()
        self.collect()

    def apply(self) -> bool:
        """Install the bound sets and hold the c2c feeds the state wants: only once the
        state is saved, so that every replica of a contract feed in the store is known to
        the saved state (or it would join the global GOSET at the next start). True if a
        c2c feed is held anew (held wires may fit now)."""
        ctx = self.ctx
        ctx.sync_sets(self.wanted_sets())
        new = False
        for fid in sorted(self.held_feeds()):
            new |= fid not in ctx.store
            ctx.node.add_feed(fid, ctx.now)
        return new

    def wanted_sets(self) -> dict[str, frozenset[bytes]]:
        out = self.root_sets()
        for c in self.state.contracts.values():
            ctrl = {c.own_ctrl} | ({c.peer_ctrl} if c.peer_ctrl is not None else set())
            out[ctrl_set_name(c.client_root, c.cid)] = frozenset(ctrl)
            data = set()
            if c.writer is not None:
                data.add(c.writer.feeds[0])
            if c.reader.feed is not None:
                data.add(c.reader.feed)
            if data:
                out[data_set_name(c.client_root, c.cid)] = frozenset(data)
        return out

    # --- reading root and control feeds ---------------------------------------------------
    def _messages(self, fid: bytes, cur: Cursor, what: str, level: int,
                  foreign: int) -> Iterator[tuple[bytes, Message | None]]:
        """(message id, message) of each complete entry of ``fid`` past ``cur``, in order,
        moving ``cur`` on. A malformed tinyISP message is logged at ``level``, an entry
        that is none at ``foreign``; either is given as None."""
        ctx = self.ctx
        while ctx.complete(fid, cur.seq + 1):
            seq = cur.seq + 1
            mid = ctx.mid(fid, seq, cur.mid)
            if mid is None:
                return
            cur.seq, cur.mid = seq, mid
            ctx.dirty = True
            content = ctx.content(fid, seq)
            try:
                msg = decode_message(content) if content is not None else None
            except MessageError as exc:
                log.log(level, "%s: %s #%d: bad message (%s); skipped", ctx.node.name, what,
                        seq, exc)
                msg = None
            else:
                if msg is None:
                    log.log(foreign, "%s: %s #%d: not a tinyISP message; skipped",
                            ctx.node.name, what, seq)
            yield mid, msg

    def pump_roots(self) -> bool:
        """Read the root feeds we follow (other applications write there too)."""
        moved = False
        for root, cur in self.state.roots.items():
            for mid, msg in self._messages(root, cur, f"root {fid_s(root)}", logging.INFO,
                                           logging.DEBUG):
                moved = True
                if msg is not None:
                    self.on_root(root, mid, msg)
        return moved

    def pump_ctrl(self, c: Contract) -> bool:
        if c.peer_ctrl is None:
            return False
        moved = False
        what = f"contract {fid_s(c.cid)}: control"
        for mid, msg in self._messages(c.peer_ctrl, c.ctrl, what, logging.WARNING,
                                       logging.WARNING):
            moved = True
            if msg is not None:
                self._on_ctrl(c, msg, mid)
            if c.cid not in self.state.contracts:
                break
        return moved

    def _on_ctrl(self, c: Contract, msg: Message, mid: bytes) -> None:
        ctx = self.ctx
        where = f"{ctx.node.name}: contract {fid_s(c.cid)}: control #{c.ctrl.seq}"
        log.debug("%s: %s", where, msg.kind)
        if isinstance(msg, FeedhoppingFin):
            datapath.on_fin(ctx, c, msg.fid)
        elif isinstance(msg, FarewellInit):
            if not self.begin_farewell(c, initiator=False):
                log.info("%s: farewell_init in phase %s; nothing to do", where,
                         c.phase.value)
                self._release_end(c)  # both started it: neither waits for an ack
        elif isinstance(msg, FarewellAck):
            log.info("%s: the peer acknowledged the farewell", where)
            self._release_end(c)
        elif isinstance(msg, FarewellFin):
            c.fin_received = True
            self._release_end(c)
            self._maybe_terminate(c)
        elif not self.on_ctrl(c, msg, mid):
            log.warning("%s: %s does not belong here; ignored", where, msg.kind)

    def own_data_feed(self, c: Contract) -> tuple[bytes, bool]:
        """Our first data feed: the one an earlier run announced in an onboard_ack on our
        control feed, or a new one. Returns it and whether it is new (to be announced)."""
        ctx = self.ctx
        for _, _, msg in ctx.messages(c.own_ctrl):
            if isinstance(msg, OnboardAck) and ctx.keys.get(msg.data_fid) is not None:
                if ctx.length(msg.data_fid) == 0:
                    ctx.send(msg.data_fid, FeedhoppingPrev(None))
                c.writer = Writer([msg.data_fid])
                return msg.data_fid, False
        return datapath.start_writer(ctx, c), True

    # --- data feeds ------------------------------------------------------------------
    def pump_data(self, c: Contract) -> bool:
        ctx = self.ctx
        feeds = self.c2c_in(c)
        moved = datapath.read(ctx, c, lambda wire: tunnel.inject(ctx, c, wire, feeds),
                              lambda: self.on_peer_end(c))
        if c.reader.held and c.cid in self.state.contracts:
            moved |= tunnel.retry_held(ctx, c, self.c2c_in(c))
        return moved

    # --- farewell ----------------------------------------------------------------------
    def begin_farewell(self, c: Contract, *, initiator: bool) -> bool:
        """Stop taking new data. The peer's farewell: answer ``farewell_ack`` and queue
        the end marker behind what is queued already. Ours: write ``farewell_init`` and
        hold the end marker until the peer shows it read the init (:meth:`_release_end`),
        so that it never reads our end of data first."""
        if c.phase not in _OPEN or c.writer is None:
            return False
        self.before_close(c)
        self.ctx.send(c.own_ctrl, FarewellInit() if initiator else FarewellAck())
        datapath.close_writer(self.ctx, c, end=not initiator)
        c.end_held = initiator
        c.phase = Phase.FAREWELL
        c.quiet_since = self.ctx.now
        log.info("%s: contract %s: farewell (%s)", self.ctx.node.name, fid_s(c.cid),
                 "ours" if initiator else "the peer's")
        return True

    def _release_end(self, c: Contract) -> None:
        """The peer read our farewell_init: our end of data may follow now."""
        if c.end_held:
            c.end_held = False
            datapath.close_writer(self.ctx, c)
            self.ctx.dirty = True
            log.debug("%s: contract %s: the peer has our farewell_init; end of data queued",
                      self.ctx.node.name, fid_s(c.cid))

    def _heard(self, c: Contract) -> None:
        if c.phase in _ENDING:
            c.quiet_since = self.ctx.now

    def on_peer_end(self, c: Contract) -> None:
        """The peer's data is read to its end marker."""
        self._release_end(c)
        if c.phase in _OPEN:
            self.begin_farewell(c, initiator=False)
        if not c.fin_sent:
            self.ctx.send(c.own_ctrl, FarewellFin())
            c.fin_sent = True
        c.phase = Phase.FAREWELL_FIN
        self._maybe_terminate(c)

    def _maybe_terminate(self, c: Contract) -> None:
        if c.fin_sent and c.fin_received and c.terminate_at is None:
            c.terminate_at = self.ctx.now + self.ctx.params.farewell_delay
            self.ctx.dirty = True
            log.info("%s: contract %s: farewell complete; deleting its feeds in %.0f s",
                     self.ctx.node.name, fid_s(c.cid), self.ctx.params.farewell_delay)

    def _timeout_at(self, c: Contract) -> float | None:
        """When a farewell that is not complete ends on its own (None: not in one)."""
        if c.phase not in _ENDING or c.terminate_at is not None:
            return None
        if c.quiet_since is None:  # a restart during the farewell: the peer gets a fresh time
            c.quiet_since = self.ctx.now
        return c.quiet_since + self.ctx.params.farewell_timeout

    def deadline(self) -> float | None:
        times = [t for c in self.state.contracts.values()
                 if (t := c.terminate_at if c.terminate_at is not None
                     else self._timeout_at(c)) is not None]
        return min(times) if times else None

    def terminate_due(self) -> None:
        for c in list(self.state.contracts.values()):
            if c.terminate_at is not None and c.terminate_at <= self.ctx.now:
                self.terminate(c, "terminated")
            elif (t := self._timeout_at(c)) is not None and t <= self.ctx.now:
                log.warning("%s: contract %s: farewell unanswered (%s) for %.0f s: ending it "
                            "here and deleting its feeds and keys", self.ctx.node.name,
                            fid_s(c.cid), self._waiting_for(c),
                            self.ctx.params.farewell_timeout)
                self.terminate(c, "farewell timed out")

    @staticmethod
    def _waiting_for(c: Contract) -> str:
        if c.end_held:
            return "no farewell_ack"
        if c.phase is Phase.FAREWELL:
            return "the peer's end of data never came"
        return "no farewell_fin"

    def terminate(self, c: Contract, outcome: str) -> None:
        """Delete every feed of ``c`` (control, data, c2c) and forget the contract."""
        ctx = self.ctx
        ctx.discard(c.own_ctrl)
        ctx.discard(c.peer_ctrl)
        ctx.discard(c.reader.feed)
        if c.writer is not None:
            for fid in c.writer.feeds:
                ctx.discard(fid)
        self.release_c2c(c)
        del self.state.contracts[c.cid]
        self.state.set_outcome(c.cid, outcome)
        ctx.dirty = True
        log.info("%s: contract %s with %s %s", ctx.node.name, fid_s(c.cid),
                 fid_s(c.peer_root(ctx.root.fid)), outcome)
