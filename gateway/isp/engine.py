"""The tinyISP engine: the facade the runtime, the CLI and the simulator drive.

Sans-I/O like the Node it sits on: the runtime hands it what ``node.drain_events()``
returned and the current time; the engine appends entries through the Node (which emit
more events: the runtime loops until the Node has none left), installs the contract's
bound sets, and tells when it wants to be called again (:meth:`IspEngine.next_deadline`).
Its state is saved to the :class:`StateStore` at the end of every call that changed it,
after the feed store has been flushed, so it never runs ahead of the feeds it describes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ..replication.events import Event
from ..replication.node import Node
from ..wire.entry import FeedKey
from . import datapath
from .client import ClientSide
from .context import Ctx
from .isp import IspSide
from .model import Contract, ContractParams, EngineState, IspError, Role
from .side import Side
from .storage import KeyStore, StateStore
from .views import AskedSubscription, C2cMessage, ContractInfo, SubRequest, Subscription

__all__ = ["DEFAULT_PARAMS", "IspEngine"]

DEFAULT_PARAMS = ContractParams()
_ENDED = frozenset({"terminated", "farewell timed out", "abandoned"})

log = logging.getLogger(__name__)


class IspEngine:
    """tinyISP for one node, as the ISP or as a client (``role``).

    ``root`` is the node's own root feed key; ``state`` and ``keys`` are where the engine
    keeps its contracts and the keys of the feeds it creates. ``seed_source`` gives the
    32-byte seeds of new feed keys (default: ``os.urandom``); ``on_message`` is called
    with every c2c message as it is delivered.
    """

    def __init__(self, node: Node, root: FeedKey, role: Role, state: StateStore,
                 keys: KeyStore, now: float, *, params: ContractParams = DEFAULT_PARAMS,
                 seed_source: Callable[[], bytes] | None = None,
                 on_message: Callable[[C2cMessage], None] | None = None) -> None:
        data = state.load()
        st = EngineState.load(data) if data else EngineState(role, root.fid)
        if st.role is not role or st.root != root.fid:
            raise IspError(f"the tinyISP state belongs to {st.role.value} {st.root.hex()}, "
                           f"not to {role.value} {root.fid.hex()}; use its own state directory")
        self.on_message = on_message
        self._state_store = state
        self._times: dict[tuple[bytes, int], float] = {}
        self._ctx = Ctx(node, root, role, keys, st, params, seed_source)
        self._ctx.now = now
        self._side: Side
        if role is Role.CLIENT:
            self._client: ClientSide | None = ClientSide(self._ctx, self._deliver)
            self._isp: IspSide | None = None
            self._side = self._client
        else:
            self._client = None
            self._isp = IspSide(self._ctx)
            self._side = self._isp
        self._ctx.empty_trash()  # what a crash left between saving and deleting
        self._ctx.dirty = True
        self._run(now)

    # --- wiring ----------------------------------------------------------------------
    @staticmethod
    def private_feeds(state: StateStore, keys: KeyStore) -> set[bytes]:
        """Feeds to keep out of the global GOSET (every contract feed), known before the
        engine exists: pass ``lambda fid: fid not in private`` as the Node's goset_filter."""
        out = set(keys.fids())
        data = state.load()
        if data:
            out |= EngineState.load(data).feeds()
        return out

    @property
    def role(self) -> Role:
        return self._ctx.role

    @property
    def node(self) -> Node:
        return self._ctx.node

    @property
    def params(self) -> ContractParams:
        return self._ctx.params

    def on_events(self, events: list[Event], now: float) -> None:
        """Everything ``node.drain_events()`` returned; may append entries."""
        if events or self._ctx.dirty:
            self._run(now)

    def next_deadline(self) -> float | None:
        return self._side.deadline()

    def on_timer(self, now: float) -> None:
        self._run(now)

    def _run(self, now: float) -> None:
        self._ctx.now = max(self._ctx.now, now)
        self._settle()

    def _settle(self) -> None:
        for _ in range(8):
            self._side.settle()
            self._commit()
            if not self._side.apply():
                return

    def _commit(self) -> None:
        ctx = self._ctx
        if not ctx.dirty:
            return
        ctx.node.store.flush()  # the state must never describe entries a crash can lose
        self._state_store.save(ctx.state.dump())
        ctx.dirty = False
        if ctx.state.trash:
            ctx.empty_trash()
            self._state_store.save(ctx.state.dump())

    def _act(self, now: float, action: Callable[[], object]) -> None:
        self._ctx.now = max(self._ctx.now, now)
        try:
            action()
        finally:
            self._settle()

    # --- roles --------------------------------------------------------------------------
    def _as_isp(self) -> IspSide:
        if self._isp is None:
            raise IspError("this is a client's tinyISP engine; that is an ISP operation")
        return self._isp

    def _as_client(self) -> ClientSide:
        if self._client is None:
            raise IspError("this is an ISP's tinyISP engine; that is a client operation")
        return self._client

    # --- ISP --------------------------------------------------------------------------------
    def allow(self, client_root: bytes) -> None:
        """Only clients on the allow-list may onboard (while the list is not empty)."""
        isp = self._as_isp()
        self._act(self._ctx.now, lambda: isp.allow(client_root))

    def disallow(self, client_root: bytes) -> None:
        isp = self._as_isp()
        self._act(self._ctx.now, lambda: isp.disallow(client_root))

    @property
    def allow_list(self) -> list[bytes]:
        return list(self._ctx.state.allow)

    def follow(self, client_root: bytes, now: float) -> None:
        """Replicate a client's root feed with it (the root set {client, us}) and read it
        for onboard requests."""
        isp = self._as_isp()
        self._act(now, lambda: isp.follow(client_root))

    @property
    def followed(self) -> list[bytes]:
        return list(self._ctx.state.roots)

    def farewell(self, client_root: bytes, now: float) -> None:
        isp = self._as_isp()
        self._act(now, lambda: isp.farewell(client_root))

    # --- client -------------------------------------------------------------------------------
    def onboard(self, isp_root: bytes, now: float) -> bytes:
        """Ask ``isp_root`` for a contract; returns the contract id."""
        client = self._as_client()
        out: list[bytes] = []
        self._act(now, lambda: out.append(client.onboard(isp_root)))
        return out[0]

    def subscribe(self, peer_root: bytes, now: float) -> bytes:
        """Ask another client of our ISP for a subscription; returns the request's ref."""
        client = self._as_client()
        out: list[bytes] = []
        self._act(now, lambda: out.append(client.subscribe(peer_root)))
        return out[0]

    def requests(self) -> list[SubRequest]:
        c = self._as_client().contract()
        if c is None:
            return []
        return [SubRequest(i.ref, i.requester) for i in c.incoming.values()]

    def asked(self) -> list[AskedSubscription]:
        """Our own subscription requests still waiting for an answer, or refused."""
        return self._as_client().asked()

    def accept(self, ref: bytes, now: float) -> None:
        client = self._as_client()
        self._act(now, lambda: client.accept(ref))

    def reject(self, ref: bytes, now: float) -> None:
        client = self._as_client()
        self._act(now, lambda: client.reject(ref))

    def leave(self, now: float) -> None:
        """Farewell from the client (or abandon an onboarding not answered yet)."""
        client = self._as_client()
        self._act(now, client.leave)

    def send(self, peer_root: bytes, content: bytes, now: float) -> None:
        """Append ``content`` to our c2c feed towards ``peer_root``; it is tunnelled to
        the peer over our data feeds."""
        client = self._as_client()
        self._act(now, lambda: client.send(peer_root, bytes(content)))

    def subscriptions(self) -> list[Subscription]:
        c = self._as_client().contract()
        if c is None:
            return []
        return [Subscription(s.peer, s.ref, s.own_c2c, s.peer_c2c, s.sent, s.delivered)
                for s in c.subs.values() if s.peer_c2c is not None]

    def inbox(self, peer_root: bytes | None = None) -> list[C2cMessage]:
        """Every c2c message delivered (from ``peer_root`` only, if given), per peer in
        order. Messages go when their contract ends (its feeds are deleted)."""
        c = self._as_client().contract()
        out: list[C2cMessage] = []
        if c is None:
            return out
        store = self._ctx.node.store
        for s in c.subs.values():
            if s.peer_c2c is None or (peer_root is not None and s.peer != peer_root):
                continue
            for seq in range(1, s.delivered + 1):
                content = store.read_content(s.peer_c2c, seq) if s.peer_c2c in store else None
                if content is not None:
                    out.append(C2cMessage(s.peer, seq, content,
                                          self._times.get((s.peer_c2c, seq))))
        return out

    def _deliver(self, msg: C2cMessage, feed: bytes) -> None:
        if msg.t is not None:
            self._times[(feed, msg.seq)] = msg.t
        log.debug("%s: message %d from %s", self._ctx.node.name, msg.seq, msg.peer.hex()[:12])
        if self.on_message is not None:
            self.on_message(msg)

    # --- both -------------------------------------------------------------------------------
    def contracts(self) -> list[ContractInfo]:
        return [self._info(c) for c in self._ctx.state.contracts.values()]

    def ended(self) -> list[tuple[bytes, str]]:
        """Contracts that ended lately (contract id, how: "terminated", "farewell timed
        out", "abandoned"), oldest first."""
        return [(ref, o) for ref, o in self._ctx.state.outcomes.items() if o in _ENDED]

    def outcome(self, ref: bytes) -> str | None:
        """How a recent onboarding or subscription request ended: "pending", "accepted",
        "rejected", "not_found", "terminated", ... (None: unknown)."""
        return self._ctx.state.outcomes.get(ref)

    def _info(self, c: Contract) -> ContractInfo:
        me = self._ctx.root.fid
        st = self._ctx.state
        if self._isp is not None:
            subs = tuple(s.b_root if s.a_root == c.client_root else s.a_root
                         for s in st.isp_subs.values()
                         if s.active and c.client_root in (s.a_root, s.b_root))
            pending = tuple(s.ref for s in st.isp_subs.values()
                            if not s.active and c.client_root in (s.a_root, s.b_root))
        else:
            subs = tuple(s.peer for s in c.subs.values() if s.active)
            pending = tuple([s.ref for s in c.subs.values() if not s.active]
                            + list(c.incoming))
        w = c.writer
        return ContractInfo(
            id=c.cid, peer=c.peer_root(me), state=c.phase.value, ctrl_out=c.own_ctrl,
            ctrl_in=c.peer_ctrl, data_in=c.reader.feed,
            data_out=tuple(w.feeds) if w is not None else (), subscriptions=subs,
            pending=pending, paused=w is not None and datapath.paused(self._ctx, w),
            queued=len(w.queue) if w is not None else 0, held=len(c.reader.held))
