"""The client role: onboarding with an ISP, subscriptions, c2c messages, farewell.

A client has at most one contract. It reads its ISP's root feed for the answer to its
onboard_request, the ISP's control feed for everything after that, and the ISP's data
feeds for tunnelled entries of its peers' c2c feeds, which it delivers in order, each
exactly once. Its own c2c entries are tunnelled over its data feeds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from . import datapath
from .context import Ctx, fid_s
from .messages import (
    REASON_NOT_FOUND,
    REASON_REJECTED,
    Message,
    OnboardAck,
    OnboardRequest,
    OnboardResponse,
    SubReq,
    SubReqIsp,
    SubResp,
    SubRespIsp,
    root_set_name,
)
from .model import ClientSub, Contract, Cursor, Incoming, IspError, Phase
from .side import Side
from .views import AskedSubscription, C2cMessage

__all__ = ["ClientSide"]

_ASKED_OUTCOMES = frozenset({"pending", REASON_REJECTED, REASON_NOT_FOUND})

log = logging.getLogger(__name__)


class ClientSide(Side):
    def __init__(self, ctx: Ctx, deliver: Callable[[C2cMessage, bytes], None]) -> None:
        super().__init__(ctx)
        self._deliver = deliver

    # --- lookups -----------------------------------------------------------------------
    def contract(self) -> Contract | None:
        return next(iter(self.state.contracts.values()), None)

    def established(self) -> Contract:
        c = self.contract()
        if c is None:
            raise IspError("no ISP contract; onboard with an ISP first")
        if c.phase is not Phase.ESTABLISHED:
            raise IspError(f"the contract with ISP {fid_s(c.isp_root)} is {c.phase.value}, "
                           "not established; wait for the ISP (or onboard again)")
        return c

    # --- user actions -----------------------------------------------------------------
    def onboard(self, isp_root: bytes) -> bytes:
        ctx = self.ctx
        if isp_root == ctx.root.fid:
            raise IspError("cannot onboard with ourselves; give the ISP's root id")
        c = self.contract()
        if c is not None:
            raise IspError(f"already in a contract with ISP {fid_s(c.isp_root)} "
                           f"({c.phase.value}); leave it first")
        key = ctx.new_key()
        self.state.roots.setdefault(isp_root, Cursor())
        entry = ctx.send_root(OnboardRequest(isp_root, key.fid))
        self._open(entry.msg_id, isp_root, key.fid)
        log.info("%s: onboarding with ISP %s: contract %s", ctx.node.name, fid_s(isp_root),
                 fid_s(entry.msg_id))
        return entry.msg_id

    def _open(self, cid: bytes, isp_root: bytes, ctrl: bytes) -> Contract:
        c = Contract(cid, self.ctx.root.fid, isp_root, Phase.ONBOARD_REQUESTED, ctrl)
        self.state.contracts[cid] = c
        self.state.set_outcome(cid, "pending")
        self.ctx.dirty = True
        return c

    def subscribe(self, peer: bytes) -> bytes:
        c = self.established()
        if peer in (self.ctx.root.fid, c.isp_root):
            raise IspError("subscribe to another client of the ISP, not to ourselves or "
                           "the ISP")
        for sub in c.subs.values():
            if sub.peer == peer:
                what = "subscribed to" if sub.active else "waiting for an answer from"
                raise IspError(f"already {what} {fid_s(peer)}")
        key = self.ctx.new_key()
        entry = self.ctx.send(c.own_ctrl, SubReq(peer, key.fid))
        c.subs[entry.msg_id] = ClientSub(entry.msg_id, peer, key.fid)
        self.state.set_outcome(entry.msg_id, "pending")
        log.info("%s: asked %s for a subscription (ref %s)", self.ctx.node.name, fid_s(peer),
                 fid_s(entry.msg_id))
        return entry.msg_id

    def asked(self) -> list[AskedSubscription]:
        """Our subscription requests in the current contract still waiting for their
        answer, or refused (unless we asked that peer again since), oldest first."""
        c = self.contract()
        if c is None:
            return []
        asked: dict[bytes, AskedSubscription] = {}  # peer -> our latest request to it
        for _, mid, msg in self.ctx.messages(c.own_ctrl):
            if not isinstance(msg, SubReq):
                continue
            asked.pop(msg.target_root, None)  # asked again since: the later one counts
            sub = c.subs.get(mid)
            outcome = "pending" if sub is not None else self.state.outcomes.get(mid)
            if (sub is None or not sub.active) and outcome in _ASKED_OUTCOMES:
                asked[msg.target_root] = AskedSubscription(mid, msg.target_root, outcome)
        return list(asked.values())

    def _incoming(self, ref: bytes) -> tuple[Contract, Incoming]:
        c = self.established()
        inc = c.incoming.get(ref)
        if inc is None:
            raise IspError(f"no subscription request {ref.hex()}; list the requests to see "
                           "which are waiting")
        return c, inc

    def _answered(self, c: Contract, ref: bytes) -> SubResp | None:
        """Our sub_resp to ``ref`` if an earlier run wrote it already."""
        for _, _, msg in self.ctx.messages(c.own_ctrl):
            if isinstance(msg, SubResp) and msg.ref == ref:
                return msg
        return None

    def accept(self, ref: bytes) -> None:
        c, inc = self._incoming(ref)
        if any(s.peer == inc.requester and s.active for s in c.subs.values()):
            raise IspError(f"already subscribed to {fid_s(inc.requester)}; reject this "
                           "request")
        prior = self._answered(c, ref)
        if prior is not None and not prior.accepted:
            del c.incoming[ref]
            self.ctx.dirty = True
            return
        if (prior is not None and prior.c2c is not None
                and self.ctx.keys.get(prior.c2c) is not None):
            own = prior.c2c
        else:
            own = self.ctx.new_key().fid
            self.ctx.send(c.own_ctrl, SubResp(ref, True, own))
        del c.incoming[ref]
        c.subs[ref] = ClientSub(ref, inc.requester, own, inc.c2c)
        self.state.set_outcome(ref, "accepted")
        log.info("%s: accepted the subscription of %s", self.ctx.node.name,
                 fid_s(inc.requester))

    def reject(self, ref: bytes) -> None:
        c, inc = self._incoming(ref)
        if self._answered(c, ref) is None:
            self.ctx.send(c.own_ctrl, SubResp(ref, False, None))
        del c.incoming[ref]
        self.state.set_outcome(ref, REASON_REJECTED)
        self.ctx.dirty = True
        log.info("%s: rejected the subscription of %s", self.ctx.node.name,
                 fid_s(inc.requester))

    def send(self, peer: bytes, content: bytes) -> None:
        c = self.established()
        for sub in c.subs.values():
            if sub.peer == peer and sub.active:
                self.ctx.publish(sub.own_c2c, content)
                return
        raise IspError(f"no accepted subscription with {fid_s(peer)}; subscribe first (or "
                       "wait for the answer)")

    def leave(self) -> None:
        c = self.contract()
        if c is None:
            raise IspError("no ISP contract to leave")
        if c.phase is Phase.ONBOARD_REQUESTED:
            self.terminate(c, "abandoned")
        else:
            self.begin_farewell(c, initiator=True)

    # --- the ISP's root feed ------------------------------------------------------------
    def on_root(self, root: bytes, mid: bytes, msg: Message) -> None:
        if isinstance(msg, OnboardResponse):
            self._on_response(root, msg)

    def _adopt(self, isp_root: bytes, ref: bytes) -> Contract | None:
        """A response to a request we wrote but did not record (a restart right after
        writing it): take the contract up again while we hold its control key."""
        if self.contract() is not None:
            return None
        for _, mid, msg in self.ctx.messages(self.ctx.root.fid):
            if (mid == ref and isinstance(msg, OnboardRequest) and msg.isp_root == isp_root
                    and self.ctx.keys.get(msg.client_ctrl) is not None):
                log.info("%s: resuming onboarding %s", self.ctx.node.name, fid_s(ref))
                return self._open(ref, isp_root, msg.client_ctrl)
        return None

    def _on_response(self, isp_root: bytes, msg: OnboardResponse) -> None:
        c = self.state.contracts.get(msg.ref) or self._adopt(isp_root, msg.ref)
        if c is None or c.isp_root != isp_root or c.phase is not Phase.ONBOARD_REQUESTED:
            return
        if not msg.accepted:
            log.warning("%s: ISP %s rejected our onboarding", self.ctx.node.name,
                        fid_s(isp_root))
            self.terminate(c, REASON_REJECTED)
            return
        c.peer_ctrl = msg.isp_ctrl
        data, new = self.own_data_feed(c)
        if new:
            self.ctx.send(c.own_ctrl, OnboardAck(data))
        c.phase = Phase.ONBOARD_ACK
        self.state.set_outcome(c.cid, "accepted")
        log.info("%s: ISP %s accepted; our data feed %s", self.ctx.node.name,
                 fid_s(isp_root), fid_s(data))

    def root_sets(self) -> dict[str, frozenset[bytes]]:
        me = self.ctx.root.fid
        return {root_set_name(me, isp): frozenset((me, isp)) for isp in self.state.roots}

    # --- the ISP's control feed -----------------------------------------------------------
    def on_ctrl(self, c: Contract, msg: Message, mid: bytes) -> bool:
        if isinstance(msg, OnboardAck):
            if c.phase is Phase.ONBOARD_ACK:
                c.reader.feed, c.reader.prev, c.reader.read = msg.data_fid, None, 0
                c.phase = Phase.ESTABLISHED
                log.info("%s: contract %s established", self.ctx.node.name, fid_s(c.cid))
            return True
        if isinstance(msg, SubReqIsp):
            self._on_sub_req(c, msg)
            return True
        if isinstance(msg, SubRespIsp):
            self._on_sub_resp(c, msg)
            return True
        return False

    def _on_sub_req(self, c: Contract, msg: SubReqIsp) -> None:
        if c.phase is not Phase.ESTABLISHED or msg.ref in c.subs or msg.ref in c.incoming:
            return
        c.incoming[msg.ref] = Incoming(msg.ref, msg.requester_root, msg.requester_c2c)
        log.info("%s: %s asks for a subscription (ref %s)", self.ctx.node.name,
                 fid_s(msg.requester_root), fid_s(msg.ref))

    def _pending_sub(self, c: Contract, ref: bytes) -> ClientSub | None:
        sub = c.subs.get(ref)
        if sub is not None:
            return None if sub.active else sub
        for _, mid, msg in self.ctx.messages(c.own_ctrl):  # written, not recorded?
            if (mid == ref and isinstance(msg, SubReq)
                    and self.ctx.keys.get(msg.c2c) is not None):
                sub = c.subs[ref] = ClientSub(ref, msg.target_root, msg.c2c)
                return sub
        return None

    def _on_sub_resp(self, c: Contract, msg: SubRespIsp) -> None:
        sub = self._pending_sub(c, msg.ref)
        if sub is None:
            log.info("%s: answer to a subscription request we do not wait for (%s)",
                     self.ctx.node.name, fid_s(msg.ref))
            return
        if msg.accepted and msg.c2c is not None:
            sub.peer_c2c = msg.c2c
            self.state.set_outcome(msg.ref, "accepted")
            log.info("%s: subscribed to %s", self.ctx.node.name, fid_s(sub.peer))
            return
        reason = msg.reason or REASON_REJECTED
        del c.subs[msg.ref]
        self.ctx.discard(sub.own_c2c)
        self.state.set_outcome(msg.ref, reason)
        log.info("%s: subscription to %s refused: %s", self.ctx.node.name, fid_s(sub.peer),
                 reason)

    # --- c2c feeds ----------------------------------------------------------------------
    def c2c_in(self, c: Contract) -> list[bytes]:
        return [s.peer_c2c for s in c.subs.values() if s.peer_c2c is not None]

    def held_feeds(self) -> set[bytes]:
        return {f for c in self.state.contracts.values() for f in self.c2c_in(c)}

    def before_close(self, c: Contract) -> None:
        self._tunnel_own(c)

    def _tunnel_own(self, c: Contract) -> bool:
        moved = False
        for sub in c.subs.values():
            if not sub.active:
                continue
            while sub.sent < self.ctx.length(sub.own_c2c):
                sub.sent += 1
                moved = True
                if not datapath.put(self.ctx, c, (sub.own_c2c, sub.sent)):
                    log.warning("%s: c2c entry %d to %s written after the farewell; not sent",
                                self.ctx.node.name, sub.sent, fid_s(sub.peer))
        if moved:
            self.ctx.dirty = True
        return moved

    def pump_c2c(self) -> bool:
        ctx = self.ctx
        moved = False
        for c in self.state.contracts.values():
            moved |= self._tunnel_own(c)
            for sub in c.subs.values():
                if sub.peer_c2c is None:
                    continue
                while ctx.complete(sub.peer_c2c, sub.delivered + 1):
                    sub.delivered += 1
                    ctx.dirty = moved = True
                    content = ctx.content(sub.peer_c2c, sub.delivered)
                    if content is not None:
                        self._deliver(C2cMessage(sub.peer, sub.delivered, content, ctx.now),
                                      sub.peer_c2c)
        return moved

    def release_c2c(self, c: Contract) -> None:
        for sub in c.subs.values():
            self.ctx.discard(sub.own_c2c)
            self.ctx.discard(sub.peer_c2c)
