"""tinyISP in a simulated mesh: the ISP and its clients as apps on simulated nodes.

:func:`attach_isp` puts an :class:`gateway.isp.IspEngine` on the scenario's ISP node and
on each client, schedules the onboarding requests, the chats (each sender subscribes
to its peer once its contract stands, the peer accepts) and the farewell, and counts
every c2c message sent and delivered. With ``direct=True`` there is no ISP at all: each
chat message is published on a feed of its own pair and replicated through the GOSET,
the baseline that tinyISP's bundling is measured against.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from gateway.isp import (
    C2cMessage,
    ContractParams,
    IspEngine,
    IspError,
    MemoryKeyStore,
    MemoryStateStore,
    Role,
)
from gateway.replication import ChainComplete, Event, NewEntry
from gateway.wire.entry import FeedKey

from .engine import Simulation, derive_seed
from .scenario import IspSpec

__all__ = ["IspReport", "attach_isp", "chat_content", "format_isp_report"]

log = logging.getLogger(__name__)


def chat_content(src: str, dst: str, number: int, size: int) -> bytes:
    """Message ``number`` from ``src`` to ``dst``: a readable tag padded to ``size``."""
    tag = f"{src}>{dst}#{number}|".encode()
    return (tag * (size // len(tag) + 1))[: max(size, len(tag))]


def _parse_tag(content: bytes) -> tuple[str, str, int] | None:
    head = content.split(b"|", 1)[0].decode(errors="replace")
    try:
        pair, number = head.rsplit("#", 1)
        src, dst = pair.split(">", 1)
        return src, dst, int(number)
    except ValueError:
        return None


@dataclass(slots=True)
class IspReport:
    """What the chats achieved: messages sent and delivered, with their latencies."""

    direct: bool
    sent: dict[tuple[str, str, int], float] = field(default_factory=dict)  # -> time sent
    delivered: dict[tuple[str, str, int], float] = field(default_factory=dict)  # -> time
    duplicates: int = 0
    out_of_order: int = 0
    refused: list[str] = field(default_factory=list)  # requests the engines refused
    contracts_left: dict[str, int] = field(default_factory=dict)  # node -> contracts at end

    def latencies(self) -> list[float]:
        return sorted(self.delivered[k] - self.sent[k] for k in self.delivered if k in self.sent)


SUBSCRIBE_RETRY_S = 300.0  # a client asks again this long after "not_found" ...
SUBSCRIBE_RETRIES = 12  # ... at most this many times


class _Client:
    """A client's app: its engine plus the person at the keyboard (subscribe, accept,
    send when the subscription stands)."""

    def __init__(self, name: str, engine: IspEngine, roots: dict[str, bytes],
                 report: IspReport, wants: set[str]) -> None:
        self.name = name
        self.engine = engine
        self.roots = roots
        self.report = report
        self.wants = wants  # peers this client subscribes to
        self.asked: dict[str, bytes] = {}  # peer -> our subscription request
        self.retry_at: dict[str, float] = {}  # peers that were no client yet: ask again then
        self.retries: dict[str, int] = {}
        self.backlog: list[tuple[str, bytes]] = []

    def on_events(self, events: list[Event], now: float) -> None:
        self.engine.on_events(events, now)
        self.progress(now)

    def next_deadline(self) -> float | None:
        own = self.engine.next_deadline()
        if self.retry_at:
            soon = min(self.retry_at.values())
            return soon if own is None else min(own, soon)
        return own

    def on_timer(self, now: float) -> None:
        self.engine.on_timer(now)
        self.progress(now)

    def _established(self) -> bool:
        return any(c.state == "established" for c in self.engine.contracts())

    def _subscribed(self) -> set[bytes]:
        return {s.peer for s in self.engine.subscriptions()}

    def progress(self, now: float) -> None:
        for req in self.engine.requests():
            self.engine.accept(req.ref, now)
        if not self._established():
            return
        for peer, ref in list(self.asked.items()):
            if (self.engine.outcome(ref) == "not_found"
                    and self.retries.get(peer, 0) < SUBSCRIBE_RETRIES):
                # the peer had no contract with the ISP yet (it onboards later than we
                # did): ask again in a while, as a person would
                del self.asked[peer]
                self.retries[peer] = self.retries.get(peer, 0) + 1
                self.retry_at[peer] = now + SUBSCRIBE_RETRY_S
        for peer in sorted(self.wants - self.asked.keys()):
            if now < self.retry_at.get(peer, now):
                continue
            self.retry_at.pop(peer, None)
            try:
                self.asked[peer] = self.engine.subscribe(self.roots[peer], now)
            except IspError as exc:
                self.report.refused.append(f"{self.name} subscribe {peer}: {exc}")
                self.asked[peer] = b""
        ready = self._subscribed()
        waiting = []
        for peer, content in self.backlog:
            if self.roots[peer] not in ready:
                waiting.append((peer, content))
                continue
            try:
                self.engine.send(self.roots[peer], content, now)
            except IspError as exc:
                self.report.refused.append(f"{self.name} send to {peer}: {exc}")
        self.backlog = waiting

    def say(self, peer: str, content: bytes, now: float) -> None:
        self.backlog.append((peer, content))
        self.progress(now)

    def leave(self, now: float) -> None:
        try:
            self.engine.leave(now)
        except IspError as exc:
            self.report.refused.append(f"{self.name} leave: {exc}")


class _Isp:
    def __init__(self, engine: IspEngine) -> None:
        self.engine = engine

    def on_events(self, events: list[Event], now: float) -> None:
        self.engine.on_events(events, now)

    def next_deadline(self) -> float | None:
        return self.engine.next_deadline()

    def on_timer(self, now: float) -> None:
        self.engine.on_timer(now)


class _DirectWatch:
    """Baseline: a node that counts chat messages arriving on plain feeds."""

    def __init__(self, node_name: str, feeds: dict[bytes, str], sim: Simulation,
                 on_content: Callable[[str, bytes, float], None]) -> None:
        self.name = node_name
        self.feeds = feeds  # fid -> sender name, for feeds addressed to this node
        self.sim = sim
        self.on_content = on_content

    def on_events(self, events: list[Event], now: float) -> None:
        store = self.sim.nodes[self.name].store
        for e in events:
            if e.__class__ not in (NewEntry, ChainComplete) or e.fid not in self.feeds:
                continue
            if isinstance(e, NewEntry) and (e.own or e.n_chunks):
                continue  # the side chain is still on its way: ChainComplete brings it
            content = store.read_content(e.fid, e.seq)
            if content is not None:
                self.on_content(self.feeds[e.fid], content, now)

    def next_deadline(self) -> float | None:
        return None

    def on_timer(self, now: float) -> None:
        return None


def _record_delivery(report: IspReport, receiver: str, content: bytes, now: float) -> None:
    tag = _parse_tag(content)
    if tag is None or tag[1] != receiver:
        return
    if tag in report.delivered:
        report.duplicates += 1
        return
    src, dst, number = tag
    if any(k[0] == src and k[1] == dst and k[2] > number for k in report.delivered):
        report.out_of_order += 1
    report.delivered[tag] = now


def attach_isp(sim: Simulation, spec: IspSpec, seed: int, *, direct: bool = False
               ) -> IspReport:
    """Put the scenario's tinyISP setup (or its direct baseline) on ``sim``."""
    report = IspReport(direct)
    if direct:
        _attach_direct(sim, spec, report)
        return report
    params = ContractParams(feed_size=spec.feed_entries, max_feeds=spec.max_unfinished)
    keys: dict[str, FeedKey] = {n: sim.feed_key(n, "root") for n in (spec.node, *spec.clients)}
    roots = {n: k.fid for n, k in keys.items()}

    def seeds(name: str) -> Callable[[], bytes]:
        rng = random.Random(derive_seed(seed, "isp-keys", name))
        return lambda: rng.randbytes(32)

    isp = IspEngine(sim.nodes[spec.node], keys[spec.node], Role.ISP, MemoryStateStore(),
                    MemoryKeyStore(), sim.now, params=params, seed_source=seeds(spec.node))
    for client in spec.clients:
        isp.follow(roots[client], sim.now)
    sim.attach(spec.node, _Isp(isp))
    apps: dict[str, _Client] = {}
    for client in spec.clients:
        # one subscription carries both directions: of two clients chatting both ways,
        # the one whose name sorts first asks
        wants = {c.dst for c in spec.chats if c.src == client}
        wants -= {c.src for c in spec.chats if c.dst == client and c.src < client}

        def delivered(msg: C2cMessage, me: str = client) -> None:
            _record_delivery(report, me, msg.content, sim.now)

        engine = IspEngine(sim.nodes[client], keys[client], Role.CLIENT, MemoryStateStore(),
                           MemoryKeyStore(), sim.now, params=params,
                           seed_source=seeds(client), on_message=delivered)
        apps[client] = _Client(client, engine, roots, report, wants)
        sim.attach(client, apps[client])

        def onboard(now: float, e: IspEngine = engine) -> None:
            e.onboard(roots[spec.node], now)

        sim.call_at(spec.onboard, client, onboard)
    for chat in spec.chats:
        for k in range(1, chat.messages + 1):
            t = chat.start + (k - 1) * chat.interval
            content = chat_content(chat.src, chat.dst, k, chat.size)
            report.sent[(chat.src, chat.dst, k)] = t

            def say(now: float, app: _Client = apps[chat.src], peer: str = chat.dst,
                    c: bytes = content) -> None:
                app.say(peer, c, now)

            sim.call_at(t, chat.src, say)
    if spec.farewell_client is not None and spec.farewell_at is not None:
        sim.call_at(spec.farewell_at, spec.farewell_client, apps[spec.farewell_client].leave)
    return report


def _attach_direct(sim: Simulation, spec: IspSpec, report: IspReport) -> None:
    feeds: dict[str, dict[bytes, str]] = {c: {} for c in spec.clients}
    for chat in spec.chats:
        key = sim.feed_key(chat.src, f"c2c-{chat.dst}")
        feeds[chat.dst][key.fid] = chat.src
        for k in range(1, chat.messages + 1):
            t = chat.start + (k - 1) * chat.interval
            report.sent[(chat.src, chat.dst, k)] = t
            sim.publish_at(t, chat.src, key, chat_content(chat.src, chat.dst, k, chat.size))
    for client, mine in feeds.items():
        if not mine:
            continue

        def arrived(_src: str, content: bytes, now: float, me: str = client) -> None:
            _record_delivery(report, me, content, now)

        sim.attach(client, _DirectWatch(client, mine, sim, arrived))


def format_isp_report(report: IspReport, sim: Simulation) -> str:
    """Messages delivered, latency, and frames and airtime per delivered message."""
    nodes = sim.nodes.values()
    frames = sum(n.stats.tx for n in nodes)
    airtime = sum(n.stats.airtime for n in nodes)
    got = len(report.delivered)
    lat = report.latencies()
    mode = "direct c2c feeds (no ISP)" if report.direct else "through the ISP (tinyISP)"
    head = f"chat messages {mode}: {got} of {len(report.sent)} delivered"
    if report.duplicates:
        head += f", {report.duplicates} duplicates"
    if report.out_of_order:
        head += f", {report.out_of_order} out of order"
    lines = [head]
    if lat:
        lines.append(f"  latency: median {lat[len(lat) // 2]:.0f} s, max {lat[-1]:.0f} s")
    if got:
        lines.append(f"  cost: {frames / got:.1f} frames and {airtime / got:.2f} s of airtime "
                     f"per delivered message ({frames} frames, {airtime:.0f} s in all)")
    for text in report.refused[:5]:
        lines.append(f"  refused: {text}")
    return "\n".join(lines)
