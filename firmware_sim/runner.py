"""From a scenario to a simulation: nodes, links, the publication schedule, the capture.

:func:`build` turns a :class:`~.scenario.Scenario` into a ready :class:`~.engine.Simulation`;
:func:`run_scenario` runs it to the end, writing the capture file and returning the
summary computed from the very records written.
"""

from __future__ import annotations

import gc
import os
import random
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from gateway.capture import CaptureWriter, Direction, Record
from gateway.replication.policy import Policy, preset

from .background import BackgroundSinks
from .bound import lower_bound, receive_headroom
from .engine import (
    CAPTURE_BUFFER,
    FieldWriter,
    RecordSink,
    Simulation,
    derive_seed,
    drops_writer,
    field_writer,
)
from .isp_run import attach_isp, format_isp_report
from .links import LinkKind
from .scenario import Scenario
from .summary import Summary, SummaryBuilder

__all__ = ["CaptureSinks", "Publication", "Tee", "build", "capture_meta", "content_for",
           "publications", "run_scenario"]


@dataclass(frozen=True, slots=True)
class Publication:
    t: float
    author: str
    label: str
    size: int
    number: int  # 1-based count of this author's entries in this feed


class Tee:
    """A capture sink that passes every record to several sinks."""

    def __init__(self, *sinks: RecordSink) -> None:
        self.sinks = sinks
        self._writes = tuple(sink.write for sink in sinks)
        self._fields = tuple(field_writer(sink) for sink in sinks)
        self._drops = tuple(drops_writer(sink) for sink in sinks)
        # ``write(Record(*fields))`` without the Record (see ``engine.FieldWriter``)
        self.write_fields: FieldWriter = (_pair(*self._fields) if len(self._fields) == 2
                                          else self._write_fields)

    def write(self, record: Record) -> None:
        for write in self._writes:
            write(record)

    def _write_fields(self, *fields: Any) -> None:
        for write in self._fields:
            write(*fields)

    def write_drops(self, t: float, face: str | None, frame: bytes | None,
                    items: list[tuple[str, str, float, float]]) -> None:
        """Drop records of one frame at several receivers (see ``engine.DropsWriter``)."""
        for write in self._drops:
            write(t, face, frame, items)


def _pair(first: FieldWriter, second: FieldWriter) -> FieldWriter:
    """Both writers, one after the other: the simulator's usual Tee (capture file and
    summary), written out because it takes every one of millions of records."""

    def both(t: float, node: str, direction: Direction, face: str | None,
             frame: bytes | None, kind: str | None, feed: bytes | None, seq: int | None,
             cnr: int | None, reason: str | None, rssi: float | None, snr: float | None,
             air: float | None) -> None:
        first(t, node, direction, face, frame, kind, feed, seq, cnr, reason, rssi, snr, air)
        second(t, node, direction, face, frame, kind, feed, seq, cnr, reason, rssi, snr, air)

    return both


def content_for(author: str, label: str, number: int, size: int) -> bytes:
    """Deterministic application content of ``size`` bytes."""
    unit = f"{author}/{label}/{number};".encode()
    return (unit * (size // len(unit) + 1))[:size]


def publications(scenario: Scenario, seed: int) -> list[Publication]:
    """Every publication of the run, in time order (ties: scenario order)."""
    out: list[Publication] = []
    for feed in scenario.feeds:
        for author in feed.authors:
            offset = 0.0
            if feed.stagger:
                rng = random.Random(derive_seed(seed, "stagger", feed.label, author))
                offset = rng.uniform(0.0, feed.interval)
            for k in range(feed.entries):
                t = feed.start + offset + k * feed.interval
                if t >= scenario.duration:
                    break
                out.append(Publication(t, author, feed.label, feed.size, k + 1))
    out.sort(key=lambda p: p.t)  # stable
    return out


def resolve_policy(scenario: Scenario, policy: str | Policy | None) -> Policy:
    """The policy a run uses: given, a preset named, or the scenario's."""
    if isinstance(policy, Policy):
        return policy
    return preset(policy or scenario.policy)


def build(scenario: Scenario, *, seed: int | None = None, policy: str | Policy | None = None,
          capture: RecordSink | None = None, without: Collection[str] = ()) -> Simulation:
    """A simulation of ``scenario`` with every node, link and publication in place.

    Nodes named in ``without`` are left out with their links and publications (the
    real-time bridge puts a simulated dongle in their place). A scenario's tinyISP setup
    is added by :func:`run_scenario` (or :func:`firmware_sim.isp_run.attach_isp`).
    """
    seed = scenario.seed if seed is None else seed
    radio = scenario.radio
    sim = Simulation(seed, path_loss=radio.path_loss, capture=capture,
                     policy=resolve_policy(scenario, policy))
    for n in scenario.nodes:
        if n.name in without:
            continue
        sim.add_node(n.name, n.x, n.y, lora=radio.params if "lora" in n.radios else None,
                     duty_cycle=radio.duty_cycle, duty_window=radio.duty_window,
                     min_gap=radio.min_gap)
    linked: set[frozenset[str]] = set()
    for a, b in scenario.ble_links():
        if a in without or b in without:
            continue
        sim.link(a, b, LinkKind.BLE, latency=scenario.ble.latency,
                 rate_bps=scenario.ble.rate_bps)
        linked.add(frozenset((a, b)))
    for spec in scenario.links:
        if spec.a in without or spec.b in without:
            continue
        if spec.kind is LinkKind.BLE and frozenset((spec.a, spec.b)) in linked:
            continue  # within range: linked already
        sim.link(spec.a, spec.b, spec.kind, latency=spec.latency, rate_bps=spec.rate_bps)
    for pub in publications(scenario, seed):
        if pub.author in without:
            continue
        key = sim.feed_key(pub.author, pub.label)
        sim.publish_at(pub.t, pub.author, key,
                       content_for(pub.author, pub.label, pub.number, pub.size))
    return sim


def capture_meta(scenario: Scenario, seed: int, policy: str) -> dict[str, Any]:
    """The free keys of the capture header."""
    p = scenario.radio.params
    published = [(p.author, p.size) for p in publications(scenario, seed)]
    bound = lower_bound(scenario, published)
    extra: dict[str, Any] = {}
    if bound is not None:
        extra = {"airtime_lower_bound_s": round(bound.seconds, 6),
                 "lower_bound_broadcasts": bound.broadcasts, "lower_bound_items": bound.items}
    headroom = receive_headroom(scenario, published)
    if headroom is not None:
        node, ratio = headroom.tightest
        extra |= {"receive_headroom": round(ratio, 4), "receive_headroom_node": node,
                  "receive_short": headroom.short}
    return {**extra, "scenario": scenario.name, "seed": seed, "policy": policy,
            "profile": scenario.radio.profile, "sf": p.sf, "bandwidth_hz": p.bandwidth_hz,
            "frequency_hz": p.frequency_hz, "tx_power_dbm": p.tx_power_dbm,
            "duty_cycle": scenario.radio.duty_cycle, "duty_window": scenario.radio.duty_window,
            "path_loss": scenario.radio.path_loss.name,
            "duration": scenario.duration, "nodes": [n.name for n in scenario.nodes]}


class CaptureSinks:
    """Where a run's records go: the summary builder, and a capture file when asked.

    With ``background`` a second process writes the file and builds the summary
    (:mod:`.background`): the same file, while the simulation runs on."""

    def __init__(self, meta: dict[str, Any], out: str | os.PathLike[str] | None, *,
                 background: bool = False) -> None:
        self.builder = SummaryBuilder()
        self.builder.write(Record(0.0, "simulator", Direction.META, meta=meta))
        self.writer: CaptureWriter | None = None
        self.background: BackgroundSinks | None = None
        self.sink: RecordSink = self.builder
        if out is not None and background:
            self.background = BackgroundSinks(out, meta)
            self.sink = self.background
        elif out is not None:
            self.writer = CaptureWriter(out, "simulator", source="simulator",
                                        buffer_size=CAPTURE_BUFFER, **meta)
            self.sink = Tee(self.writer, self.builder)

    @property
    def count(self) -> int:
        """Records in the capture file, the meta record included (known once closed
        when written in the background)."""
        if self.background is not None:
            return self.background.count
        return self.writer.count if self.writer is not None else 0

    def close(self) -> Summary:
        """Publish the capture file; the summary of everything written."""
        if self.background is not None:
            return self.background.close()
        if self.writer is not None:
            self.writer.close()
        return self.builder.result()

    def abort(self) -> None:
        """Leave no half-written capture behind."""
        if self.background is not None:
            self.background.abort()
        if self.writer is not None:
            self.writer.abort()


#: the cyclic garbage collector's first threshold while a simulation runs (Python's is
#: 700 allocations)
SIM_GC_THRESHOLD = 100_000


@contextmanager
def few_collections() -> Iterator[None]:
    """Run the block with the built simulation out of the garbage collector's sight and
    its youngest generation collected every SIM_GC_THRESHOLD allocations, then restore
    both. A run allocates millions of short-lived containers (reports, tuples, queue
    entries) that reference counting frees; collecting them every 700 allocations, and
    walking every node's store in the older generations, cost city-100 (24 virtual
    hours, no capture) 94.5 and 92.2 s of CPU instead of 70.0 and 81.8 s. With the
    capture written in the background it made no difference (106 s against 110 s)."""
    before = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(SIM_GC_THRESHOLD, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()


def run_scenario(scenario: Scenario, out: str | os.PathLike[str] | None, *,
                 seed: int | None = None, policy: str | Policy | None = None,
                 progress: Callable[[float], None] | None = None,
                 isp_direct: bool = False, background: bool = False) -> Summary:
    """Run ``scenario`` to its end; write the capture to ``out`` (None: no file).

    A scenario with an ``[isp]`` table runs its clients and ISP (``isp_direct``: its
    chats on plain feeds instead, the baseline); the summary's notes report the chats.
    ``background``: a second process writes the capture (see :class:`CaptureSinks`).
    """
    seed = scenario.seed if seed is None else seed
    chosen = resolve_policy(scenario, policy)
    meta = capture_meta(scenario, seed, chosen.name)
    if scenario.isp is not None:
        meta["isp"] = "direct" if isp_direct else "tinyisp"
    sinks = CaptureSinks(meta, out, background=background)
    try:
        sim = build(scenario, seed=seed, policy=chosen, capture=sinks.sink)
        isp = (attach_isp(sim, scenario.isp, seed, direct=isp_direct)
               if scenario.isp is not None else None)
        with few_collections():
            sim.run(scenario.duration, progress=progress)
    except BaseException:
        sinks.abort()
        raise
    summary = sinks.close()
    if isp is not None:
        summary.notes.append(format_isp_report(isp, sim))
    return summary
