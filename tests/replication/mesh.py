"""Nodes linked in memory under virtual time: the test bench for replication.

Every node has one broadcast face named ``radio``; a frame a node sends reaches each
node it is linked to after ``delay`` seconds, unless the ``fate`` function drops,
duplicates or delays it. Time only moves from one deadline or delivery to the next.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from gateway.replication import Face, Node, Outgoing, Policy, RxReport
from gateway.replication.policy import DEFAULT
from gateway.store.base import FeedStore
from gateway.store.memory import MemoryStore
from gateway.wire.entry import (
    FeedKey,
    chunks_needed,
    genesis_prev,
    parse_chain20,
    verify_chunk,
    verify_entry,
)


@dataclass(slots=True)
class Fate:
    """What happens to one transmission towards one receiver."""

    drop: bool = False
    copies: int = 1
    extra_delay: float = 0.0


FateFn = Callable[[int, str, str, bytes], Fate]  # (transmission no., src, dst, frame)


def ideal(_n: int, _src: str, _dst: str, _frame: bytes) -> Fate:
    return Fate()


@dataclass
class Mesh:
    rng: random.Random = field(default_factory=lambda: random.Random(1))
    delay: float = 0.01
    fate: FateFn = ideal
    face: Face = field(default_factory=lambda: Face("radio"))
    nodes: dict[str, Node] = field(default_factory=dict)
    links: set[frozenset[str]] = field(default_factory=set)
    now: float = 0.0
    transmissions: int = 0
    deliveries: int = 0
    on_rx: Callable[[float, str, bytes, RxReport], None] | None = None
    on_tx: Callable[[float, str, Outgoing], None] | None = None
    _heap: list[tuple[float, int, str, bytes]] = field(default_factory=list)
    _seq: int = 0

    def add(self, name: str, policy: Policy = DEFAULT, store: MemoryStore | None = None) -> Node:
        node = Node(store if store is not None else MemoryStore(), policy=policy,
                    rng=random.Random(self.rng.getrandbits(64)), name=name, now=self.now)
        node.add_face(self.face, self.now)
        self.nodes[name] = node
        return node

    def link(self, a: str, b: str) -> None:
        self.links.add(frozenset((a, b)))

    def unlink(self, a: str, b: str) -> None:
        self.links.discard(frozenset((a, b)))

    def link_all(self, names: Iterable[str] | None = None) -> None:
        names = list(names if names is not None else self.nodes)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                self.link(a, b)

    def neighbours(self, name: str) -> list[str]:
        return [other for other in self.nodes if other != name
                and frozenset((name, other)) in self.links]

    def _send(self, src: str, out: Outgoing) -> None:
        self.transmissions += 1
        if self.on_tx is not None:
            self.on_tx(self.now, src, out)
        for dst in self.neighbours(src):
            fate = self.fate(self.transmissions, src, dst, out.frame)
            if fate.drop:
                continue
            for _ in range(fate.copies):
                self._seq += 1
                heapq.heappush(self._heap, (self.now + self.delay + fate.extra_delay,
                                            self._seq, dst, out.frame))

    def step(self) -> bool:
        """Advance to the next event; False when nothing is left to do."""
        times = [t for n in self.nodes.values() if (t := n.next_deadline()) is not None]
        if self._heap:
            times.append(self._heap[0][0])
        if not times:
            return False
        self.now = max(self.now, min(times))
        while self._heap and self._heap[0][0] <= self.now:
            _, _, dst, frame = heapq.heappop(self._heap)
            self.deliveries += 1
            report = self.nodes[dst].receive(self.now, "radio", frame)
            if self.on_rx is not None:
                self.on_rx(self.now, dst, frame, report)
        for name, node in self.nodes.items():
            for out in node.frames_to_send(self.now):
                self._send(name, out)
        return True

    def run_until(self, done: Callable[[], bool], limit: float) -> float:
        """Run until ``done()`` holds; return the virtual time it took (AssertionError past
        ``limit`` seconds)."""
        start = self.now
        steps = 0
        while not done():
            if self.now - start > limit or not self.step():
                raise AssertionError(f"no convergence within {self.now - start:.1f} s "
                                     f"of virtual time ({steps} steps)")
            steps += 1
        return self.now - start

    def run_for(self, seconds: float) -> None:
        end = self.now + seconds
        while self.now < end:
            if not self.step():
                return


def verified_log(store: FeedStore, fid: bytes) -> list[tuple[bytes, list[bytes]]]:
    """(packet, chunks held) of every entry of ``fid``, after checking each entry against
    its predecessor and each chunk against its side chain (WireError if one fails)."""
    out = []
    prev = genesis_prev(fid)
    for seq in range(1, store.replica(fid).max_seq + 1):
        packet = store.read_packet(fid, seq)
        assert packet is not None, f"entry {seq} missing"
        prev = verify_entry(fid, seq, prev, packet).msg_id
        chunks: list[bytes] = []
        while (c := store.read_chunk(fid, seq, len(chunks))) is not None:
            chunks.append(c)
        expect = parse_chain20(packet).ptr if chunks_needed(packet) else None
        for c in chunks:
            assert expect is not None, f"entry {seq} has no side chain, yet chunks"
            expect = verify_chunk(expect, c)
        out.append((packet, chunks))
    return out


def holdings(node: Node) -> dict[bytes, tuple[int, int]]:
    """fid -> (entries held, chunks still missing)."""
    return {fid: (node.store.replica(fid).max_seq, node.store.replica(fid).missing_chunks())
            for fid in node.store.feeds()}


def converged(nodes: Iterable[Node], expected: dict[bytes, int]) -> bool:
    """Every node holds exactly ``expected`` (fid -> length), all chunks included."""
    want = {fid: (n, 0) for fid, n in expected.items()}
    return all(holdings(node) == want for node in nodes)


def author(node: Node, seed: int, contents: Iterable[bytes], now: float = 0.0) -> FeedKey:
    key = FeedKey.from_seed(seed.to_bytes(32, "big"))
    for content in contents:
        node.publish(key, content, now)
    return key
