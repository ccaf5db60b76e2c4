"""An ISP and its clients as in-memory nodes under virtual time, each with an IspEngine.

Built on :class:`tests.replication.mesh.Mesh`: the mesh moves frames, this bench drives
the engines the way the runtime does (drain the Node's events into the engine until none
are left, call the engine's timer at its deadline) and can restart any node: a new Node
over the same feed store and a new engine over the same state and keys.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from gateway.isp import (
    C2cMessage,
    ContractParams,
    IspEngine,
    MemoryKeyStore,
    MemoryStateStore,
    Role,
)
from gateway.replication import Face, Node
from gateway.replication.policy import DEFAULT, Policy
from gateway.store.base import FeedStore
from gateway.store.memory import MemoryStore
from gateway.wire.entry import FeedKey

from ..replication.mesh import Fate, FateFn, Mesh, ideal

FAST = DEFAULT.with_(name="fast", rtt_initial=0.5, rtt_max=2.0, tx_jitter=0.0, credit=8,
                     goset_interval_min=1.0, goset_interval_max=8.0, request_delay=0.5,
                     push_rtt_max=8.0)
QUICK = ContractParams(farewell_delay=2.0)


class Crash(Exception):
    """The process dies while saving the engine state (after the feeds were written)."""


class CrashingStateStore(MemoryStateStore):
    """A state store whose ``n``-th save while ``live`` (counting from 1), for every ``n``
    in ``fail_on``, does not happen: the process "dies" instead. The bench makes it live
    only while the engine handles events or starts, never inside a user's call."""

    def __init__(self, fail_on: set[int] | None = None) -> None:
        super().__init__()
        self.fail_on = fail_on or set()
        self.attempts = 0
        self.live = False

    def save(self, data: bytes) -> None:
        if not self.live:
            super().save(data)
            return
        self.attempts += 1
        if self.attempts in self.fail_on:
            raise Crash(f"crash at save {self.attempts}")
        super().save(data)


@dataclass
class Peer:
    name: str
    role: Role
    root: FeedKey
    store: FeedStore
    state: CrashingStateStore
    keys: MemoryKeyStore
    params: ContractParams
    engine: IspEngine | None = None
    got: list[C2cMessage] = field(default_factory=list)

    @property
    def e(self) -> IspEngine:
        assert self.engine is not None
        return self.engine

    @property
    def node(self) -> Node:
        return self.e.node


class World:
    def __init__(self, *, seed: int = 1, policy: Policy = FAST, fate: FateFn = ideal,
                 delay: float = 0.01) -> None:
        # one WANT (and CHNK) per bound set per round: an ISP has several sets per client
        self.mesh = Mesh(rng=random.Random(seed), delay=delay, fate=fate,
                         face=Face("radio", queue_size=256))
        self.policy = policy
        self.peers: dict[str, Peer] = {}
        self._seeds = random.Random(seed * 7919)
        self.restarts = 0
        self.crashes = 0

    @property
    def now(self) -> float:
        return self.mesh.now

    def seed(self) -> bytes:
        return self._seeds.randbytes(32)

    def add(self, name: str, role: Role, params: ContractParams = QUICK,
            crash_on: set[int] | None = None) -> Peer:
        peer = Peer(name, role, FeedKey.from_seed(self.seed()), MemoryStore(),
                    CrashingStateStore(crash_on), MemoryKeyStore(), params)
        self.peers[name] = peer
        self._start(peer)
        # the root feed exists from the start, as a gateway's identity does
        peer.node.publish(peer.root, b"hello from " + name.encode(), self.now)
        self.pump()
        return peer

    def _start(self, peer: Peer) -> None:
        for _ in range(100):
            peer.state.live = True
            try:
                self._start_once(peer)
                return
            except Crash:
                self.crashes += 1
            finally:
                peer.state.live = False
        raise AssertionError(f"{peer.name} crashes at every start")

    def _start_once(self, peer: Peer) -> None:
        private = IspEngine.private_feeds(peer.state, peer.keys)
        node = Node(peer.store, policy=self.policy,
                    rng=random.Random(self.mesh.rng.getrandbits(64)), name=peer.name,
                    now=self.now, goset_filter=lambda fid: fid not in private)
        node.add_face(self.mesh.face, self.now)
        self.mesh.nodes[peer.name] = node
        peer.engine = IspEngine(node, peer.root, peer.role, peer.state, peer.keys, self.now,
                                params=peer.params, seed_source=self.seed,
                                on_message=peer.got.append)

    def restart(self, name: str) -> None:
        """Throw the Node and the engine away; build both again from what they saved."""
        peer = self.peers[name]
        peer.engine = None
        self._start(peer)
        self.restarts += 1
        self.pump()

    def link(self, a: str, b: str) -> None:
        self.mesh.link(a, b)

    def pump(self) -> None:
        """What the runtime does after every frame and every call: feed the Node's events
        to the engine until there are none left."""
        for peer in self.peers.values():
            if peer.engine is None:
                continue
            for _ in range(1000):
                events = peer.node.drain_events()
                if not events:
                    break
                peer.state.live = True
                try:
                    peer.e.on_events(events, self.now)
                except Crash:
                    self.crashes += 1
                    self.restart(peer.name)
                    break
                finally:
                    peer.state.live = False
            else:
                raise AssertionError(f"{peer.name}: events never stop")

    def step(self) -> bool:
        """The mesh's next step, or the engines' timers when they are due first."""
        mesh = self.mesh
        due = [t for p in self.peers.values() if (t := p.e.next_deadline()) is not None]
        times = [t for n in mesh.nodes.values() if (t := n.next_deadline()) is not None]
        if mesh._heap:
            times.append(mesh._heap[0][0])
        if due and (not times or min(due) < min(times)):
            mesh.now = max(mesh.now, min(due))
        elif not mesh.step():
            return False
        self.pump()
        for peer in self.peers.values():
            t = peer.e.next_deadline()
            if t is not None and t <= mesh.now:
                peer.state.live = True
                try:
                    peer.e.on_timer(mesh.now)
                except Crash:
                    self.crashes += 1
                    self.restart(peer.name)
                finally:
                    peer.state.live = False
        self.pump()
        return True

    def run_until(self, done: Callable[[], bool], limit: float = 600.0) -> float:
        start = self.now
        while not done():
            if self.now - start > limit or not self.step():
                raise AssertionError(f"not done within {self.now - start:.1f} s of virtual time")
        return self.now - start

    def run_for(self, seconds: float) -> None:
        end = self.now + seconds
        running = True
        while running and self.now < end:
            running = self.step()


def star(n_clients: int = 2, *, seed: int = 1, params: ContractParams = QUICK,
         fate: FateFn = ideal, crash_on: dict[str, set[int]] | None = None) -> World:
    """An ISP ``isp`` linked to clients ``c0``, ``c1``, ... (not linked to each other)."""
    crash_on = crash_on or {}
    w = World(seed=seed, fate=fate)
    w.add("isp", Role.ISP, params, crash_on.get("isp"))
    for i in range(n_clients):
        w.add(f"c{i}", Role.CLIENT, params, crash_on.get(f"c{i}"))
        w.link("isp", f"c{i}")
    return w


def onboard(w: World, client: str, isp: str = "isp", limit: float = 300.0) -> bytes:
    """Follow, onboard, run until the contract is established on both sides."""
    c, i = w.peers[client], w.peers[isp]
    i.e.follow(c.root.fid, w.now)
    cid = c.e.onboard(i.root.fid, w.now)
    w.pump()
    w.run_until(lambda: phase(c, cid) == "established" and phase(i, cid) == "established",
                limit)
    return cid


def phase(peer: Peer, cid: bytes) -> str | None:
    for info in peer.e.contracts():
        if info.id == cid:
            return info.state
    return None


def subscribe(w: World, a: str, b: str, limit: float = 300.0) -> bytes:
    """``a`` asks ``b``, ``b`` accepts; run until both hold the subscription."""
    pa, pb = w.peers[a], w.peers[b]
    ref = pa.e.subscribe(pb.root.fid, w.now)
    w.pump()
    w.run_until(lambda: any(r.ref == ref for r in pb.e.requests()), limit)
    pb.e.accept(ref, w.now)
    w.pump()
    w.run_until(lambda: pa.e.outcome(ref) == "accepted", limit)
    return ref


__all__ = ["FAST", "QUICK", "Crash", "CrashingStateStore", "Fate", "Peer", "World", "onboard",
           "phase", "star", "subscribe"]
