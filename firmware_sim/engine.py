"""The discrete-event loop: real replication Nodes over modelled links, in virtual time.

A :class:`Simulation` owns a virtual clock, an event heap, a :class:`~.channel.LoRaChannel`
and any number of nodes. Each node is a :class:`gateway.replication.Node` with an
in-memory store and its own seeded ``random.Random``, driven through exactly the calls
the gateway runtime makes: ``receive(now, face, frame)``, ``frames_to_send(now)``,
``next_deadline()``, ``publish(key, content, now)`` and ``drain_events()``. The
simulator adds no protocol logic of its own; it only moves frames and time.

Faces per node: ``lora0`` (``Face.lora_radio``: CRC trailer, duty-cycle budget) when the
node has a LoRa radio, and one point-to-point face per BLE or IP link, named
``ble:<peer>`` or ``ip:<peer>``. An *external* radio (the simulated dongle of
``realtime.py``) is a radio on the channel without a Node: frames it hears are handed
to a callback, frames it sends come in through :meth:`Simulation.external_transmit`.

Every frame sent, heard or lost and every entry stored becomes one capture record
(``gateway.capture``), written to the ``capture`` sink in event order, so that a run is
fully described by its capture. Same scenario and seed, same records, byte for byte.

Programmatic use::

    sim = Simulation(seed=7, capture=writer)           # writer: anything with write(record)
    sim.add_node("a", 0, 0, lora=profile("EU868.a"))
    sim.add_node("b", 150, 0, lora=profile("EU868.a"))
    key = sim.feed_key("a")
    sim.publish_at(10.0, "a", key, b"hello")
    sim.run(until=600.0)
"""

from __future__ import annotations

import hashlib
import heapq
import logging
import math
import random
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Protocol

from gateway.capture import Direction, Record
from gateway.replication import Event, Face, FaceKind, NewEntry, Node, Outgoing, Policy, RxReport
from gateway.replication.policy import DEFAULT
from gateway.store.memory import MemoryStore
from gateway.wire.entry import FeedKey
from gateway.wire.lora import LoRaParams

from .channel import LoRaChannel, Transmission
from .links import LinkKind, PointLink
from .phy import DUTY_CYCLE, PATH_LOSS_PRESETS, PathLoss, round_tenth

__all__ = ["CAPTURE_BUFFER", "LORA_FACE", "App", "DropsWriter", "FieldWriter", "RecordSink",
           "SimNode", "SimStats", "Simulation", "derive_seed", "drops_writer", "field_writer"]

log = logging.getLogger(__name__)

LORA_FACE = "lora0"
CAPTURE_BUFFER = 1 << 20  # bytes: a capture file's write buffer (a busy simulated day
# writes a gigabyte, in records of some 100 B; Python's default buffer is 8 KiB)

# event kinds; the number also orders events that fall on the same instant
_TX_END = 0  # a frame leaves the air: receptions are resolved first
_DELIVER = 1  # a point-to-point frame arrives
_PUBLISH = 2  # an application publishes an entry
_WAKE = 3  # a node's deadline
_CALL = 4  # a scheduled action (an application doing something at a set time)
_CAD = 5  # a radio that found the channel busy listens again

# listen before talk: a busy channel defers a frame by U(1, 4) of its airtimes, at most
# this many times in a row; then it goes out anyway (as the dongle firmware does)
LBT_MAX_TRIES = 8
HEARD_WHILE_WAITING = "heard-while-waiting"  # the drop reason of such a frame


class RecordSink(Protocol):
    def write(self, record: Record) -> None: ...


# A record's fields, in Record's order: t, node, dir, face, frame, kind, feed, seq, cnr,
# reason, rssi, snr, air. A sink may take them without a Record (``write_fields``): the
# simulator writes millions of records, and the Record objects alone cost some 5-7 % of a
# run (city-100).
FieldWriter = Callable[[float, str, Direction, str | None, bytes | None, str | None,
                        bytes | None, int | None, int | None, str | None, float | None,
                        float | None, float | None], None]

_RX, _TX, _DROP, _STORE = Direction.RX, Direction.TX, Direction.DROP, Direction.STORE


def field_writer(sink: RecordSink) -> FieldWriter:
    """``sink.write_fields`` where the sink has it, else a Record made for ``sink.write``."""
    fast: FieldWriter | None = getattr(sink, "write_fields", None)
    if fast is not None:
        return fast
    write = sink.write

    def fields(t: float, node: str, direction: Direction, face: str | None,
               frame: bytes | None, kind: str | None, feed: bytes | None, seq: int | None,
               cnr: int | None, reason: str | None, rssi: float | None, snr: float | None,
               air: float | None) -> None:
        write(Record(t, node, direction, face, frame, kind, feed, seq, cnr, reason, rssi,
                     snr, air))

    return fields


# The drop records of one frame (t, face, frame) at several receivers, in order: (node,
# reason, rssi, snr) each. A frame's commonest outcome in a busy mesh is a channel drop at
# most radios around its sender; a sink may write them in one go (``write_drops``).
DropsWriter = Callable[[float, str | None, bytes | None, list[tuple[str, str, float, float]]],
                       None]


def drops_writer(sink: RecordSink) -> DropsWriter:
    """``sink.write_drops`` where the sink has it, else one drop record after another."""
    fast: DropsWriter | None = getattr(sink, "write_drops", None)
    if fast is not None:
        return fast
    fields = field_writer(sink)

    def drops(t: float, face: str | None, frame: bytes | None,
              items: list[tuple[str, str, float, float]]) -> None:
        for node, reason, rssi, snr in items:
            fields(t, node, _DROP, face, frame, None, None, None, None, reason, rssi, snr,
                   None)

    return drops


class App(Protocol):
    """An application on a Node (tinyISP, for one): it sees the Node's events and may
    publish in reply; the loop keeps handing it events until it publishes nothing more."""

    def on_events(self, events: list[Event], now: float) -> None: ...
    def next_deadline(self) -> float | None: ...
    def on_timer(self, now: float) -> None: ...


def derive_seed(seed: int, *labels: object) -> int:
    """A 64-bit seed for one part of the simulation, independent of creation order."""
    text = "/".join(str(x) for x in (seed, *labels))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


@dataclass(slots=True)
class SimNode:
    """A participant: a Node (or an external radio) with its position and links."""

    name: str
    x: float
    y: float
    node: Node | None
    radio: int | None = None
    deliver: Callable[[bytes, float, float], None] | None = None  # external radios only
    links: dict[str, PointLink] = field(default_factory=dict)  # face name -> link
    wake_at: float = math.inf
    waiting: deque[Outgoing | bytes] = field(default_factory=deque)  # frames for a busy radio
    app: App | None = None
    lbt: random.Random | None = None  # listen before talk (its backoff draws); None: off
    lbt_tries: int = 0  # busy channels found in a row for the frame waiting
    lbt_until: float = -math.inf  # backing off until then


@dataclass(slots=True)
class SimStats:
    events: int = 0
    transmissions: int = 0
    receptions: int = 0  # frames decoded by a radio, or delivered over a link
    lbt_deferrals: int = 0  # transmissions put off because the channel was busy
    lbt_dropped: int = 0  # frames dropped while waiting: the same frame was heard
    drops: Counter[str] = field(default_factory=Counter)  # channel drops by reason
    published: int = 0


class Simulation:
    """Nodes, links and a channel under one virtual clock."""

    def __init__(self, seed: int = 1, *, path_loss: PathLoss | None = None,
                 capture: RecordSink | None = None, policy: Policy = DEFAULT) -> None:
        self.seed = seed
        self.policy = policy
        self._emit: FieldWriter | None = None
        self._emit_drops: DropsWriter | None = None
        self._capture: RecordSink | None = None
        self.capture = capture
        self.channel = LoRaChannel(path_loss or PATH_LOSS_PRESETS["log-distance"],
                                   random.Random(derive_seed(seed, "channel")))
        self.now = 0.0
        self.stats = SimStats()
        self.members: dict[str, SimNode] = {}
        self._by_radio: dict[int, SimNode] = {}
        self._heap: list[tuple[float, int, int, object, object]] = []
        self._seq = 0

    @property
    def capture(self) -> RecordSink | None:
        """Where every record goes (None: nowhere)."""
        return self._capture

    @capture.setter
    def capture(self, sink: RecordSink | None) -> None:
        self._capture = sink
        self._emit = field_writer(sink) if sink is not None else None
        self._emit_drops = drops_writer(sink) if sink is not None else None

    # --- building the mesh --------------------------------------------------------------
    @property
    def nodes(self) -> dict[str, Node]:
        """The Nodes by name (external radios have none)."""
        return {name: m.node for name, m in self.members.items() if m.node is not None}

    def add_node(self, name: str, x: float = 0.0, y: float = 0.0, *,
                 lora: LoRaParams | None = None, duty_cycle: float = 0.01,
                 duty_window: float = 3600.0, min_gap: float = 0.0,
                 policy: Policy | None = None, queue_size: int = 5) -> Node:
        """A Node at (x, y) metres; with ``lora`` it gets a LoRa radio and face ``lora0``."""
        self._check_name(name)
        node = Node(MemoryStore(), policy=policy or self.policy,
                    rng=random.Random(derive_seed(self.seed, "node", name)), name=name,
                    now=self.now)
        member = SimNode(name, float(x), float(y), node)
        if lora is not None:
            member.radio = self.channel.add_radio(name, x, y, lora, duty_cycle=duty_cycle,
                                                  duty_window=duty_window)
            face = Face.lora_radio(LORA_FACE, lora, duty_cycle=duty_cycle, min_gap=min_gap,
                                   queue_size=queue_size)
            node.add_face(replace(face, duty_window=duty_window), self.now)
            self._by_radio[member.radio] = member
            if node.policy.listen_before_talk:
                member.lbt = random.Random(derive_seed(self.seed, "lbt", name))
        self.members[name] = member
        self._wake(member, self.now)
        return node

    def add_external(self, name: str, x: float, y: float, lora: LoRaParams,
                     deliver: Callable[[bytes, float, float], None], *,
                     duty_cycle: float = 0.01, duty_window: float = 3600.0) -> None:
        """A radio without a Node: ``deliver(frame, rssi, snr)`` gets what it decodes."""
        self._check_name(name)
        member = SimNode(name, float(x), float(y), None, deliver=deliver)
        member.radio = self.channel.add_radio(name, x, y, lora, duty_cycle=duty_cycle,
                                              duty_window=duty_window)
        self._by_radio[member.radio] = member
        self.members[name] = member

    def link(self, a: str, b: str, kind: LinkKind = LinkKind.IP, *, latency: float = 0.05,
             rate_bps: float = math.inf, queue_size: int = 5) -> PointLink:
        """A point-to-point link (BLE or IP) between two Nodes."""
        link = PointLink(kind, a, b, latency, rate_bps)
        for end in (a, b):
            member = self.members.get(end)
            if member is None or member.node is None:
                raise ValueError(f"cannot link {end!r}: no such node")
            if link.face(end) in member.links:
                raise ValueError(f"{a} and {b} are linked by {kind.value} already")
        for end in (a, b):
            member = self.members[end]
            assert member.node is not None
            face = link.face(end)
            member.links[face] = link
            member.node.add_face(Face(face, kind=FaceKind.POINT_TO_POINT,
                                      queue_size=queue_size), self.now)
            self._wake(member, self.now)
        return link

    def _check_name(self, name: str) -> None:
        if not name or name in self.members:
            raise ValueError(f"node name {name!r} is empty or taken")

    def feed_key(self, author: str, label: str = "") -> FeedKey:
        """A deterministic feed key for ``author`` (one per label)."""
        seed = hashlib.sha256(f"tinyssb-sim/{self.seed}/{author}/{label}".encode()).digest()
        return FeedKey.from_seed(seed)

    def publish_at(self, t: float, author: str, key: FeedKey, content: bytes) -> None:
        """Schedule ``author`` to publish ``content`` on ``key``'s feed at time ``t``."""
        if author not in self.members or self.members[author].node is None:
            raise ValueError(f"unknown author {author!r}")
        self._push(max(t, self.now), _PUBLISH, self.members[author], (key, bytes(content)))

    def attach(self, name: str, app: App) -> None:
        """Run ``app`` on node ``name``: it gets every event of that Node from now on."""
        member = self.members.get(name)
        if member is None or member.node is None:
            raise ValueError(f"cannot attach to {name!r}: no such node")
        member.app = app
        self._wake(member, self.now)

    def call_at(self, t: float, name: str, action: Callable[[float], None]) -> None:
        """Run ``action(now)`` at time ``t`` on behalf of node ``name`` (then service it)."""
        if name not in self.members or self.members[name].node is None:
            raise ValueError(f"unknown node {name!r}")
        self._push(max(t, self.now), _CALL, self.members[name], action)

    def at(self, t: float, action: Callable[[float], None]) -> None:
        """Run ``action(now)`` at time ``t`` on behalf of no node: the timer of something
        that drives external radios (``firmware_sim.oracle``)."""
        self._push(max(t, self.now), _CALL, None, action)

    # --- running ------------------------------------------------------------------------
    def next_time(self) -> float | None:
        """When the next event falls; None when nothing is scheduled."""
        return self._heap[0][0] if self._heap else None

    def run(self, until: float, *, progress: Callable[[float], None] | None = None,
            every: int = 2000) -> None:
        """Process every event up to and including ``until``; the clock ends at ``until``."""
        heap, pop = self._heap, heapq.heappop
        on_tx_end, service = self._on_tx_end, self._service
        count = 0  # events handled (added to the stats once: a counter in a local is cheaper)
        try:
            while heap and heap[0][0] <= until:
                t, kind, _, who, what = pop(heap)
                self.now = t
                count += 1
                if kind == _TX_END:
                    on_tx_end(who, what)  # type: ignore[arg-type]
                elif kind == _WAKE:
                    member: SimNode = who  # type: ignore[assignment]
                    if member.wake_at == t:
                        member.wake_at = math.inf
                        service(member)
                elif kind == _DELIVER:
                    self._on_deliver(who, what)  # type: ignore[arg-type]
                elif kind == _PUBLISH:
                    self._on_publish(who, what)  # type: ignore[arg-type]
                elif kind == _CAD:
                    self._pump(who)  # type: ignore[arg-type]
                else:
                    what(t)  # type: ignore[operator]
                    if who is not None:
                        self._service(who)  # type: ignore[arg-type]
                if progress is not None and count % every == 0:
                    progress(t)
        finally:
            self.stats.events += count
        self.now = max(self.now, until)
        if progress is not None:
            progress(self.now)

    def external_transmit(self, name: str, frame: bytes) -> None:
        """An external radio puts ``frame`` (CRC included) on the air now."""
        member = self.members[name]
        if member.radio is None or member.node is not None:
            raise ValueError(f"{name!r} is not an external radio")
        member.waiting.append(bytes(frame))
        self._pump(member)

    # --- events -------------------------------------------------------------------------
    def _push(self, t: float, kind: int, who: object, what: object = None) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (t, kind, self._seq, who, what))

    def _wake(self, member: SimNode, t: float) -> None:
        if t < member.wake_at:
            member.wake_at = t
            self._push(t, _WAKE, member)

    def _service(self, member: SimNode) -> None:
        """Let a Node send what it has now and ask when it wants to run next."""
        node = member.node
        assert node is not None
        app = member.app
        if app is not None:
            self._run_app(member, app)
        for out in node.frames_to_send(self.now):
            self._send(member, out)
        node.drain_events()
        self._reschedule(member)

    def _run_app(self, member: SimNode, app: App) -> None:
        node = member.node
        assert node is not None
        due = app.next_deadline()
        if due is not None and due <= self.now:
            app.on_timer(self.now)
        for _ in range(1000):  # an app that keeps publishing in reply to itself is a bug
            events = node.drain_events()
            if not events:
                return
            for event in events:
                if isinstance(event, NewEntry) and event.own:
                    self._record_own(member, event)
            app.on_events(events, self.now)
        log.warning("%s: its app did not settle", member.name)

    def _record_own(self, member: SimNode, event: NewEntry) -> None:
        """Store records of an entry the app published (entry and side-chain chunks)."""
        self.stats.published += 1
        if self._emit is None or member.node is None:
            return
        store, chunks = member.node.store, 0
        while store.read_chunk(event.fid, event.seq, chunks) is not None:
            chunks += 1
        self._emit_own(member.name, event.fid, event.seq, chunks)

    def _emit_own(self, node: str, fid: bytes, seq: int, chunks: int) -> None:
        """The store records of an entry published: the entry, then each chunk."""
        emit, now = self._emit, self.now
        assert emit is not None
        emit(now, node, _STORE, None, None, "entry", fid, seq, None, None, None, None, None)
        for cnr in range(chunks):
            emit(now, node, _STORE, None, None, "chunk", fid, seq, cnr, None, None, None, None)

    def _emit_rx(self, node: str, face: str, frame: bytes, report: RxReport,
                 rssi: float | None = None, snr: float | None = None) -> None:
        """The rx or drop record of a frame the Node took in, then a store record per
        item it stored."""
        emit, now, drop = self._emit, self.now, report.drop
        assert emit is not None
        emit(now, node, _RX if drop is None else _DROP, face, frame, report.kind._value_,
             report.fid, report.seq, report.cnr, None if drop is None else drop._value_,
             rssi, snr, None)
        for s in report.stored:
            emit(now, node, _STORE, face, None, "entry" if s.cnr is None else "chunk", s.fid,
                 s.seq, s.cnr, None, None, None, None)

    def _emit_tx(self, node: str, out: Outgoing) -> None:
        if self._emit is not None:
            self._emit(self.now, node, _TX, out.face, out.frame, out.kind._value_, out.fid,
                       out.seq, out.cnr, None, None, None, out.airtime if out.airtime else None)

    def _reschedule(self, member: SimNode) -> None:
        """Wake the Node at its next deadline (now, if it has something due).

        After a frame arrives the Node is not asked for frames at once: its deadline
        says whether anything became due (answers queued, a timer re-armed), and the
        wake-up at that instant sends them. Several frames arriving at the same instant
        thus cost one ``frames_to_send`` call.
        """
        deadline = member.node.next_deadline()  # type: ignore[union-attr]
        if member.app is not None:
            app_due = member.app.next_deadline()
            if app_due is not None and (deadline is None or app_due < deadline):
                deadline = app_due
        if deadline is not None:
            # _wake(member, max(deadline, now)), inlined: asked after every frame taken in
            t = self.now if self.now > deadline else deadline  # noqa: FURB136 - max() costs a call
            if t < member.wake_at:
                member.wake_at = t
                self._seq += 1
                heapq.heappush(self._heap, (t, _WAKE, self._seq, member, None))

    def _send(self, member: SimNode, out: Outgoing) -> None:
        if out.face == LORA_FACE and member.radio is not None:
            member.waiting.append(out)
            self._pump(member)
            return
        link = member.links.get(out.face)
        if link is None:
            log.warning("%s: frame for unknown face %s dropped", member.name, out.face)
            return
        self.stats.transmissions += 1
        self._emit_tx(member.name, out)
        peer = self.members[link.peer(member.name)]
        arrival = link.arrival(member.name, len(out.frame), self.now)
        self._push(arrival, _DELIVER, peer, (link.face(peer.name), out.frame))

    def _pump(self, member: SimNode) -> None:
        """Put waiting frames on the air while the radio is free (one at a time); with
        listen before talk, not while it hears the channel busy."""
        assert member.radio is not None
        now = self.now
        while member.waiting and not self.channel.busy(member.radio, now):
            if member.lbt is not None:
                if now < member.lbt_until:
                    return
                if member.lbt_tries < LBT_MAX_TRIES and self.channel.sensed(member.radio, now):
                    head = member.waiting[0]
                    frame = head if isinstance(head, bytes) else head.frame
                    air = self.channel.frame_airtime(member.radio, len(frame))
                    member.lbt_tries += 1
                    member.lbt_until = now + member.lbt.uniform(1.0, 4.0) * air
                    self.stats.lbt_deferrals += 1
                    self._push(member.lbt_until, _CAD, member)
                    return
                member.lbt_tries = 0
            self._start_tx(member, member.waiting.popleft())

    def _drop_heard_copy(self, member: SimNode, frame: bytes, rssi: float,
                         snr: float) -> None:
        """A radio backing off (listen before talk) that hears the very frame it waits to
        send drops its copy: the neighbours just heard it. The drop record carries the
        copy's signal."""
        for i, out in enumerate(member.waiting):
            if (out if isinstance(out, bytes) else out.frame) == frame:
                del member.waiting[i]
                self.stats.lbt_dropped += 1
                if self._emit is not None:
                    kind = None if isinstance(out, bytes) else out.kind._value_
                    self._emit(self.now, member.name, _DROP, LORA_FACE, frame, kind, None,
                               None, None, HEARD_WHILE_WAITING, rssi, snr, None)
                return

    def _start_tx(self, member: SimNode, out: Outgoing | bytes) -> None:
        assert member.radio is not None
        frame = out if isinstance(out, bytes) else out.frame
        tx = self.channel.transmit(member.radio, frame, self.now)
        if tx is None:
            self.stats.drops[DUTY_CYCLE] += 1
            if self._emit is not None:
                kind = None if isinstance(out, bytes) else out.kind._value_
                self._emit(self.now, member.name, _DROP, LORA_FACE, frame, kind, None, None,
                           None, DUTY_CYCLE, None, None, None)
            return
        self.stats.transmissions += 1
        if not isinstance(out, bytes):
            self._emit_tx(member.name, out)
        elif self._emit is not None:
            self._emit(self.now, member.name, _TX, LORA_FACE, frame, None, None, None, None,
                       None, None, None, tx.airtime)
        self._push(tx.end, _TX_END, member, tx)

    def _on_tx_end(self, sender: SimNode, tx: Transmission) -> None:
        now, emit, by_radio, stats = self.now, self._emit, self._by_radio, self.stats
        frame = tx.frame
        drops, emit_drops = stats.drops, self._emit_drops
        dropped: list[tuple[str, str, float, float]] = []  # drop records not written yet
        for receiver, power, ratio, drop in self.channel.outcomes(tx):
            member = by_radio[receiver]
            rssi, snr = round_tenth(power), round(ratio * 4) / 4  # round(power, 1)
            if drop is not None:  # the commonest outcome in a busy mesh
                drops[drop] += 1
                if emit_drops is not None:
                    dropped.append((member.name, drop, rssi, snr))
                continue
            if dropped:  # records stay in receiver order
                assert emit_drops is not None
                emit_drops(now, LORA_FACE, frame, dropped)
                dropped = []
            stats.receptions += 1
            if member.lbt is not None and member.waiting:
                self._drop_heard_copy(member, frame, rssi, snr)
            node = member.node
            if node is None:
                if emit is not None:
                    emit(now, member.name, _RX, LORA_FACE, frame, None, None, None, None,
                         None, rssi, snr, None)
                if member.deliver is not None:
                    member.deliver(frame, rssi, snr)
                continue
            report = node.receive(now, LORA_FACE, frame, snr=snr)
            if emit is not None:
                self._emit_rx(member.name, LORA_FACE, frame, report, rssi, snr)
            if report.drop is None:  # a dropped frame never brings a deadline forward
                if report.stored and member.app is not None:  # _after_receive(), inlined
                    self._wake(member, now)
                else:
                    self._reschedule(member)
        if dropped:
            assert emit_drops is not None
            emit_drops(now, LORA_FACE, frame, dropped)
        if sender.waiting:
            self._pump(sender)

    def _on_deliver(self, member: SimNode, what: tuple[str, bytes]) -> None:
        face, frame = what
        assert member.node is not None
        self.stats.receptions += 1
        report = member.node.receive(self.now, face, frame)
        if self._emit is not None:
            self._emit_rx(member.name, face, bytes(frame), report)
        if report.drop is None:
            self._after_receive(member, bool(report.stored))

    def _after_receive(self, member: SimNode, stored: bool) -> None:
        if stored and member.app is not None:
            self._wake(member, self.now)  # its app reads what arrived without delay
        else:
            self._reschedule(member)

    def _on_publish(self, member: SimNode, what: tuple[FeedKey, bytes]) -> None:
        key, content = what
        assert member.node is not None
        entry = member.node.publish(key, content, self.now)
        member.node.drain_events()
        self.stats.published += 1
        if self._emit is not None:
            self._emit_own(member.name, entry.fid, entry.seq, len(entry.chunks))
        self._reschedule(member)
