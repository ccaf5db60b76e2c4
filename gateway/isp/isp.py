"""The ISP role: onboarding clients, mediating subscriptions, forwarding c2c entries.

The ISP reads the root feed of every client it follows for onboard requests, each
contract's client control feed for acks, subscription traffic, fins and the farewell,
and each client's data feeds for tunnelled c2c entries. Those are re-verified into the
ISP's own replica of the c2c feed; once an entry is complete, its wire is queued for the
data feed towards the other client of the subscription.
"""

from __future__ import annotations

import logging

from . import datapath
from .context import fid_s
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
from .model import Contract, Cursor, IspError, IspSub, Phase
from .side import Side

__all__ = ["IspSide"]

log = logging.getLogger(__name__)


class IspSide(Side):
    # --- lookups -----------------------------------------------------------------------
    def by_root(self) -> dict[bytes, Contract]:
        return {c.client_root: c for c in self.state.contracts.values()}

    def contract_of(self, client_root: bytes) -> Contract | None:
        for c in self.state.contracts.values():
            if c.client_root == client_root:
                return c
        return None

    # --- operator actions ---------------------------------------------------------------
    def follow(self, client_root: bytes) -> None:
        if client_root == self.ctx.root.fid:
            raise IspError("that is our own root id; follow a client's root id")
        if client_root not in self.state.roots:
            self.state.roots[client_root] = Cursor()
            self.ctx.dirty = True

    def allow(self, client_root: bytes) -> None:
        if client_root not in self.state.allow:
            self.state.allow.append(client_root)
            self.ctx.dirty = True

    def disallow(self, client_root: bytes) -> None:
        if client_root in self.state.allow:
            self.state.allow.remove(client_root)
            self.ctx.dirty = True

    def farewell(self, client_root: bytes) -> None:
        c = self.contract_of(client_root)
        if c is None:
            raise IspError(f"no contract with {fid_s(client_root)}; list the contracts")
        if c.phase is Phase.ONBOARDING:
            raise IspError(f"the contract with {fid_s(client_root)} is still onboarding; "
                           "wait until it is established")
        self.begin_farewell(c, initiator=True)

    # --- clients' root feeds ------------------------------------------------------------
    def on_root(self, root: bytes, mid: bytes, msg: Message) -> None:
        if isinstance(msg, OnboardRequest):
            self._on_request(root, mid, msg)

    def _answered(self, cid: bytes) -> OnboardResponse | None:
        """Our response to ``cid`` if an earlier run wrote it already."""
        for _, _, msg in self.ctx.messages(self.ctx.root.fid):
            if isinstance(msg, OnboardResponse) and msg.ref == cid:
                return msg
        return None

    def _on_request(self, client_root: bytes, cid: bytes, req: OnboardRequest) -> None:
        ctx = self.ctx
        if req.isp_root != ctx.root.fid or cid in self.state.contracts:
            return
        if self.state.allow and client_root not in self.state.allow:
            self._refuse(client_root, cid, "it is not on the allow-list")
            return
        existing = self.contract_of(client_root)
        if existing is not None:
            if existing.phase is not Phase.ONBOARDING:
                self._refuse(client_root, cid, f"it has a contract already ({fid_s(existing.cid)})")
                return
            self.terminate(existing, "replaced")  # never acknowledged: asked again
        prior = self._answered(cid)
        if prior is not None and not prior.accepted:
            return
        if prior is not None and prior.isp_ctrl is not None and ctx.keys.get(prior.isp_ctrl):
            ctrl = prior.isp_ctrl
        else:
            ctrl = ctx.new_key().fid
            ctx.send_root(OnboardResponse(cid, True, ctrl))
        self.state.contracts[cid] = Contract(cid, client_root, ctx.root.fid, Phase.ONBOARDING,
                                             ctrl, peer_ctrl=req.client_ctrl)
        self.state.set_outcome(cid, "accepted")
        log.info("%s: accepted %s: contract %s", ctx.node.name, fid_s(client_root), fid_s(cid))

    def _refuse(self, client_root: bytes, cid: bytes, why: str) -> None:
        if self._answered(cid) is None:
            self.ctx.send_root(OnboardResponse(cid, False, None))
        self.state.set_outcome(cid, REASON_REJECTED)
        log.info("%s: rejected the onboarding of %s: %s", self.ctx.node.name,
                 fid_s(client_root), why)

    def root_sets(self) -> dict[str, frozenset[bytes]]:
        me = self.ctx.root.fid
        return {root_set_name(client, me): frozenset((client, me)) for client in self.state.roots}

    # --- clients' control feeds ------------------------------------------------------------
    def on_ctrl(self, c: Contract, msg: Message, mid: bytes) -> bool:
        if isinstance(msg, OnboardAck):
            if c.phase is Phase.ONBOARDING:
                c.reader.feed, c.reader.prev, c.reader.read = msg.data_fid, None, 0
                data, new = self.own_data_feed(c)
                if new:
                    self.ctx.send(c.own_ctrl, OnboardAck(data))
                c.phase = Phase.ESTABLISHED
                log.info("%s: contract %s with %s established", self.ctx.node.name,
                         fid_s(c.cid), fid_s(c.client_root))
            return True
        if isinstance(msg, SubReq):
            self._on_sub_req(c, mid, msg)
            return True
        if isinstance(msg, SubResp):
            self._on_sub_resp(c, msg)
            return True
        return False

    def _on_sub_req(self, c: Contract, ref: bytes, msg: SubReq) -> None:
        ctx = self.ctx
        if ref in self.state.isp_subs or c.phase is not Phase.ESTABLISHED:
            return
        same = next((s for s in self.state.isp_subs.values()
                     if (s.a_root, s.b_root, s.a_c2c)
                     == (c.client_root, msg.target_root, msg.c2c)), None)
        if same is not None:  # a replay (or a re-sent copy): the other side was asked
            log.info("%s: %s asked again for subscription %s; not forwarded again",
                     ctx.node.name, fid_s(c.client_root), fid_s(same.ref))
            return
        earlier = self._asked_before(c, ref, msg)
        if earlier is not None and self.state.outcomes.get(earlier) != REASON_NOT_FOUND:
            # the same request after the other side answered it (or it ended): a new
            # request names a new c2c feed. (One that found nobody may be asked again.)
            log.info("%s: %s repeated its request %s (%s); not forwarded again",
                     ctx.node.name, fid_s(c.client_root), fid_s(earlier),
                     self.state.outcomes.get(earlier, "ended"))
            return
        target = self.contract_of(msg.target_root)
        if target is None or target is c or target.phase is not Phase.ESTABLISHED:
            ctx.send(c.own_ctrl, SubRespIsp(ref, False, reason=REASON_NOT_FOUND))
            self.state.set_outcome(ref, REASON_NOT_FOUND)
            log.info("%s: %s asked for %s, who is no client of ours", ctx.node.name,
                     fid_s(c.client_root), fid_s(msg.target_root))
            return
        self.state.isp_subs[ref] = IspSub(ref, c.client_root, msg.c2c, msg.target_root)
        ctx.send(target.own_ctrl, SubReqIsp(ref, c.client_root, msg.c2c))
        self.state.set_outcome(ref, "pending")
        log.info("%s: %s asks %s for a subscription (ref %s)", ctx.node.name,
                 fid_s(c.client_root), fid_s(msg.target_root), fid_s(ref))

    def _asked_before(self, c: Contract, ref: bytes, msg: SubReq) -> bytes | None:
        """The ref of an earlier sub_req of ``c``'s client naming the same peer and c2c
        feed as ``msg`` (written as ``ref``), if there is one."""
        if c.peer_ctrl is None:
            return None
        for _, mid, earlier in self.ctx.messages(c.peer_ctrl):
            if mid == ref:
                return None
            if (isinstance(earlier, SubReq) and earlier.target_root == msg.target_root
                    and earlier.c2c == msg.c2c):
                return mid
        return None

    def _on_sub_resp(self, c: Contract, msg: SubResp) -> None:
        ctx = self.ctx
        sub = self.state.isp_subs.get(msg.ref)
        if sub is None or sub.b_root != c.client_root or sub.active:
            log.info("%s: %s answered a request that is not pending (%s); ignored",
                     ctx.node.name, fid_s(c.client_root), fid_s(msg.ref))
            return
        requester = self.contract_of(sub.a_root)
        if msg.accepted and msg.c2c is not None:
            sub.b_c2c = msg.c2c
            if requester is not None:
                ctx.send(requester.own_ctrl, SubRespIsp(msg.ref, True, msg.c2c))
            self.state.set_outcome(msg.ref, "accepted")
            log.info("%s: subscription %s between %s and %s", ctx.node.name, fid_s(msg.ref),
                     fid_s(sub.a_root), fid_s(sub.b_root))
        else:
            self._drop_sub(sub)
            if requester is not None:
                ctx.send(requester.own_ctrl, SubRespIsp(msg.ref, False, reason=REASON_REJECTED))
            self.state.set_outcome(msg.ref, REASON_REJECTED)
        ctx.dirty = True

    def _drop_sub(self, sub: IspSub) -> None:
        del self.state.isp_subs[sub.ref]
        for fid in (sub.a_c2c, sub.b_c2c):
            if fid is not None and fid not in self.state.retired:
                self.state.retired.append(fid)
        self.ctx.dirty = True

    # --- c2c forwarding ---------------------------------------------------------------------
    def c2c_in(self, c: Contract) -> list[bytes]:
        out = []
        for sub in self.state.isp_subs.values():
            if sub.a_root == c.client_root:
                out.append(sub.a_c2c)
            if sub.b_root == c.client_root and sub.b_c2c is not None:
                out.append(sub.b_c2c)
        return out

    def held_feeds(self) -> set[bytes]:
        out = set()
        for sub in self.state.isp_subs.values():
            out.add(sub.a_c2c)
            if sub.b_c2c is not None:
                out.add(sub.b_c2c)
        return out

    def pump_c2c(self) -> bool:
        moved = False
        contracts = self.by_root()
        for sub in self.state.isp_subs.values():
            if sub.b_c2c is None:
                continue
            fwd_a = self._forward(sub.a_c2c, sub.fwd_a, contracts.get(sub.b_root))
            fwd_b = self._forward(sub.b_c2c, sub.fwd_b, contracts.get(sub.a_root))
            if (fwd_a, fwd_b) != (sub.fwd_a, sub.fwd_b):
                sub.fwd_a, sub.fwd_b = fwd_a, fwd_b
                self.ctx.dirty = moved = True
        return moved

    def _forward(self, src: bytes, done: int, dst: Contract | None) -> int:
        while self.ctx.complete(src, done + 1):
            done += 1
            if dst is None or not datapath.put(self.ctx, dst, (src, done)):
                log.info("%s: c2c entry %d of %s not forwarded: its receiver is leaving",
                         self.ctx.node.name, done, fid_s(src))
        return done

    def release_c2c(self, c: Contract) -> None:
        for sub in list(self.state.isp_subs.values()):
            if c.client_root in (sub.a_root, sub.b_root):
                self._drop_sub(sub)

    def collect(self) -> None:
        """Delete c2c feeds of ended subscriptions once no writer queue needs them."""
        if not self.state.retired:
            return
        queued = {item[0] for c in self.state.contracts.values() if c.writer is not None
                  for item in c.writer.queue if item is not None}
        for fid in [f for f in self.state.retired if f not in queued]:
            self.state.retired.remove(fid)
            self.ctx.discard(fid)
