"""What a simulation did, read from its capture: convergence, frames, airtime, losses.

Everything here is computed from capture records only (``gateway.capture``), so it
applies to any capture file, and the tests check a run by its capture rather than by the
simulator's internal state.

Convergence: an entry is *published* where its author's capture holds ``store`` records
without a face (the entry itself and each of its side-chain chunks). A node *holds* an
entry completely once it has store records for all of those items. The mesh has
converged when every node holds every published entry completely; the convergence time
is the time of the last store record that completed the picture.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gateway.capture import Direction, Record, read_capture
from gateway.stats import percentile

from .dutybound import DUTY_BOUND_SHARE, DUTY_WINDOW_S, DutyTracker

__all__ = ["ON_TIME_S", "Convergence", "Summary", "SummaryBuilder", "convergence",
           "convergence_lines", "format_summary", "spread_json", "summarize", "tally"]


WORST_SERVED = 5  # nodes named in the summary's "worst served" line


@dataclass(slots=True)
class Convergence:
    converged: bool
    time: float | None  # when the last node completed the last entry; None: not converged
    last_publication: float | None
    nodes: int
    nodes_complete: int  # nodes holding every published entry completely
    entries: int  # entries published
    held: int  # (node, entry) pairs complete
    on_time: int  # ... of which complete within ON_TIME_S of the publication
    latencies: list[float] = field(default_factory=list)  # per entry complete everywhere:
    # time from its publication until the last node held it
    # per node: entries it holds completely, and of those within ON_TIME_S
    node_held: dict[str, int] = field(default_factory=dict)
    node_on_time: dict[str, int] = field(default_factory=dict)
    # per entry that some node held completely only after ON_TIME_S, or never: its
    # publication time and those nodes
    late: list[tuple[float, tuple[str, ...]]] = field(default_factory=list)
    published: list[float] = field(default_factory=list)  # every entry's publication time

    @property
    def share(self) -> float:
        """Share of (node, entry) pairs complete."""
        total = self.nodes * self.entries
        return self.held / total if total else 1.0

    @property
    def on_time_share(self) -> float:
        """Share of (node, entry) pairs complete within ``ON_TIME_S`` of the publication."""
        total = self.nodes * self.entries
        return self.on_time / total if total else 1.0

    def worst_served(self, n: int = WORST_SERVED) -> list[tuple[str, int, int]]:
        """Up to ``n`` nodes that were late (or never complete) on some entry, fewest
        pairs on time first: (node, entries on time, entries held completely). Where a
        mesh needs another relay."""
        late = [(node, on_time, self.node_held.get(node, 0))
                for node, on_time in self.node_on_time.items() if on_time < self.entries]
        late.sort(key=lambda x: (x[1], x[2], x[0]))
        return late[:n]


@dataclass(slots=True)
class Summary:
    meta: dict[str, Any]
    convergence: Convergence
    tx_frames: Counter[str]
    tx_airtime: dict[str, float]  # seconds on air by kind (LoRa faces)
    tx_bytes: Counter[str]
    rx_frames: int
    drops: Counter[str]
    end: float  # time of the last record
    notes: list[str] = field(default_factory=list)  # what the run adds (a tinyISP report)
    # per radio node: seconds its trailing hour held more than DUTY_BOUND_SHARE of its
    # duty-cycle budget (only where the capture says which duty cycle applies)
    duty_bound: dict[str, float] = field(default_factory=dict)

    @property
    def collisions(self) -> int:
        return self.drops.get("collision", 0)


ON_TIME_S = 900.0
"""A pair counts as on time when the node held the entry completely within this long of its
publication: the p95 entry spread that issue 19 asks of city-100."""

_DROP, _RX, _TX, _STORE = Direction.DROP, Direction.RX, Direction.TX, Direction.STORE


class SummaryBuilder:
    """A capture sink (``write(record)``) that keeps the counts a summary needs."""

    def __init__(self) -> None:
        self.meta: dict[str, Any] = {}
        self._seen: dict[str, None] = {}
        self._published: dict[tuple[bytes, int], list[float]] = {}  # (feed, seq) -> [t, items]
        self._held: dict[tuple[str, bytes, int], list[float]] = {}  # (node, feed, seq) -> [items, t]
        self.tx_frames: Counter[str] = Counter()
        self.tx_airtime: dict[str, float] = {}
        self.tx_bytes: Counter[str] = Counter()
        self.rx_frames = 0
        self.drops: Counter[str] = Counter()
        self.end = 0.0
        self._duty: dict[str, DutyTracker] = {}
        self._duty_threshold = 0.0  # seconds per window; 0: no duty cycle known
        self._duty_window = DUTY_WINDOW_S  # the capture's, once its header says

    def write(self, record: Record) -> None:
        if record.dir is Direction.META:
            self.meta = dict(record.meta)
            duty = self.meta.get("duty_cycle")
            self._duty_window = float(self.meta.get("duty_window") or DUTY_WINDOW_S)
            self._duty_threshold = (DUTY_BOUND_SHARE * float(duty) * self._duty_window
                                    if isinstance(duty, int | float) and duty > 0 else 0.0)
            return
        self.write_fields(record.t, record.node, record.dir, record.face, record.frame,
                          record.kind, record.feed, record.seq, record.cnr, record.reason,
                          record.rssi, record.snr, record.air)

    def write_fields(self, t: float, node: str, direction: Direction, face: str | None,
                     frame: bytes | None, kind: str | None, feed: bytes | None,
                     seq: int | None, cnr: int | None, reason: str | None,
                     rssi: float | None, snr: float | None, air: float | None) -> None:
        """``write(Record(t, node, direction, ...))`` without the Record (not META)."""
        if t > self.end:  # noqa: PLR1730 - cheaper than max() per record
            self.end = t
        if node not in self._seen:
            self._seen[node] = None
        if direction is _DROP:  # the commonest record in a busy mesh
            self.drops[reason or "unknown"] += 1
        elif direction is _RX:
            self.rx_frames += 1
        elif direction is _TX:
            kind = kind or "unknown"
            self.tx_frames[kind] += 1
            self.tx_airtime[kind] = self.tx_airtime.get(kind, 0.0) + (air or 0.0)
            self.tx_bytes[kind] += len(frame or b"")
            if air and self._duty_threshold:
                tracker = self._duty.get(node)
                if tracker is None:
                    tracker = self._duty[node] = DutyTracker(self._duty_threshold,
                                                             self._duty_window)
                tracker.send(t, air)
        elif direction is _STORE and feed is not None and seq is not None:
            entry = (feed, seq)
            if face is None:  # the author's own publication
                pub = self._published.setdefault(entry, [t, 0])
                pub[1] += 1
            held = self._held.setdefault((node, *entry), [0, 0.0])
            held[0] += 1
            held[1] = t

    def write_drops(self, t: float, face: str | None, frame: bytes | None,
                    items: list[tuple[str, str, float, float]]) -> None:
        """The drop records of one frame at several receivers: (node, reason, rssi, snr)
        for each (see ``engine.DropsWriter``)."""
        if t > self.end:  # noqa: PLR1730 - as in write_fields
            self.end = t
        seen, drops = self._seen, self.drops
        for node, reason, _, _ in items:
            if node not in seen:
                seen[node] = None
            drops[reason or "unknown"] += 1

    def convergence(self) -> Convergence:
        nodes = list(self.meta.get("nodes") or self._seen)
        held_at = self._held

        def completed(feed: bytes, seq: int, items: float) -> list[float | None]:
            times: list[float | None] = []
            for node in nodes:
                held = held_at.get((node, feed, seq))
                times.append(held[1] if held is not None and held[0] >= items else None)
            return times

        return tally(nodes, ((t_pub, completed(feed, seq, items))
                             for (feed, seq), (t_pub, items) in self._published.items()))

    def result(self) -> Summary:
        end = max(self.end, float(self.meta.get("duration") or 0.0))
        for tracker in self._duty.values():
            tracker.advance(end)
        return Summary(self.meta, self.convergence(), self.tx_frames, self.tx_airtime,
                       self.tx_bytes, self.rx_frames, self.drops, self.end,
                       duty_bound={node: tr.bound for node, tr in sorted(self._duty.items())})


def tally(nodes: Sequence[str],
          entries: Iterable[tuple[float, Sequence[float | None]]]) -> Convergence:
    """The convergence of published entries: for each, its publication time and, per
    node of ``nodes`` (in that order), when that node held it completely (None: never)."""
    held_pairs = on_time = 0
    done_at = 0.0
    complete_nodes = dict.fromkeys(nodes, True)
    node_held = dict.fromkeys(nodes, 0)
    node_on_time = dict.fromkeys(nodes, 0)
    latencies: list[float] = []
    late: list[tuple[float, tuple[str, ...]]] = []
    published: list[float] = []
    count = 0
    last_pub: float | None = None
    for t_pub, times in entries:
        count += 1
        published.append(t_pub)
        if last_pub is None or t_pub > last_pub:
            last_pub = t_pub
        last = t_pub
        everywhere = True
        behind: list[str] = []
        for node, t in zip(nodes, times, strict=True):
            if t is None:
                everywhere = False
                complete_nodes[node] = False
                behind.append(node)
                continue
            held_pairs += 1
            node_held[node] += 1
            last = max(last, t)
            if t - t_pub <= ON_TIME_S:
                on_time += 1
                node_on_time[node] += 1
            else:
                behind.append(node)
        if behind:
            late.append((t_pub, tuple(behind)))
        if everywhere:
            latencies.append(last - t_pub)
            done_at = max(done_at, last)
    converged = all(complete_nodes.values()) and bool(nodes)
    return Convergence(converged, done_at if converged else None, last_pub, len(nodes),
                       sum(complete_nodes.values()), count, held_pairs, on_time, latencies,
                       node_held, node_on_time, late, published)


def spread_json(latencies: Iterable[float]) -> dict[str, float] | None:
    """The entry spread as numbers: median, p95, max and how many entries it covers."""
    lat = sorted(latencies)
    if not lat:
        return None
    return {"median": percentile(lat, 0.5), "p95": percentile(lat, 0.95), "max": lat[-1],
            "entries": len(lat)}


def summarize(source: str | os.PathLike[str] | Iterable[Record]) -> Summary:
    """The summary of a capture file (or of records already read)."""
    records = read_capture(source) if isinstance(source, str | os.PathLike) else source
    builder = SummaryBuilder()
    for record in records:
        builder.write(record)
    return builder.result()


def convergence(source: str | os.PathLike[str] | Iterable[Record]) -> Convergence:
    """When (and whether) every node held every published entry completely."""
    return summarize(source).convergence


def _seconds(t: float | None) -> str:
    if t is None:
        return "-"
    if t >= 3600:
        return f"{t:.1f} s ({t / 3600:.2f} h)"
    return f"{t:.1f} s"


def summary_json(s: Summary) -> dict[str, Any]:
    """What :func:`format_summary` prints, as numbers (``tinyssb sim run --json``)."""
    c = s.convergence
    meta = {k: v.hex() if isinstance(v, bytes) else v for k, v in s.meta.items()
            if k not in ("format", "version")}
    return {
        "meta": meta,
        "converged": c.converged, "convergence_t": c.time,
        "last_publication_t": c.last_publication, "nodes": c.nodes,
        "nodes_complete": c.nodes_complete, "entries": c.entries, "held_pairs": c.held,
        "share": c.share, "on_time_pairs": c.on_time, "on_time_share": c.on_time_share,
        "per_node": {node: {"held": c.node_held.get(node, 0), "on_time": on_time}
                     for node, on_time in sorted(c.node_on_time.items())},
        "spread": spread_json(c.latencies),
        "tx": {kind: {"frames": s.tx_frames[kind], "airtime_s": s.tx_airtime.get(kind, 0.0),
                      "bytes": s.tx_bytes[kind]} for kind in sorted(s.tx_frames)},
        "rx_frames": s.rx_frames, "drops": dict(s.drops), "end_t": s.end,
        "notes": list(s.notes),
        "duty_bound_s": dict(s.duty_bound),
    }


DUTY_BOUND_NAMED = 8  # nodes named in the duty-bound line


def _duty_line(s: Summary, span: float) -> str:
    """The nodes whose trailing hour held more than ``DUTY_BOUND_SHARE`` of their budget
    for more than half the run, and the late pairs they hold."""
    c = s.convergence
    share = {node: bound / span for node, bound in s.duty_bound.items()}
    ranked = sorted(share, key=lambda n: (-share[n], n))
    window = float(s.meta.get("duty_window") or DUTY_WINDOW_S)
    trailing = "hour" if window == DUTY_WINDOW_S else f"{window:g} s"
    head = f"duty-bound (trailing {trailing} above {DUTY_BOUND_SHARE:.0%} of the budget): "
    bound = [n for n in ranked if share[n] > 0.5]
    if not bound:
        top = ranked[0]
        return head + f"no node for half the run; the most, {top} {share[top]:.0%} of it"
    named = ", ".join(f"{n} {share[n]:.0%}" for n in bound[:DUTY_BOUND_NAMED])
    more = " ..." if len(bound) > DUTY_BOUND_NAMED else ""
    line = head + f"{len(bound)} of {c.nodes} nodes for more than half the run: {named}{more}"
    late = {n: c.entries - on_time for n, on_time in c.node_on_time.items()}
    total = sum(late.values())
    if total:
        theirs = sum(late.get(n, 0) for n in bound)
        line += f"; they hold {theirs} of the {total} late (node, entry) pairs"
    return line


def convergence_lines(c: Convergence) -> list[str]:
    """The summary's lines on convergence: whether and when, the entry spread, the pairs
    complete within ``ON_TIME_S`` and the worst-served nodes."""
    lines: list[str] = []
    if c.converged:
        lines.append(f"converged: yes, at {_seconds(c.time)} "
                     f"(last publication at {_seconds(c.last_publication)})")
    else:
        lines.append(f"converged: no; {c.nodes_complete} of {c.nodes} nodes hold everything, "
                     f"{c.share:.1%} of (node, entry) pairs complete")
    if c.latencies:
        lat = sorted(c.latencies)
        lines.append(f"entry spread (publication -> last node): median "
                     f"{percentile(lat, 0.5):.1f} s, p95 {percentile(lat, 0.95):.1f} s, "
                     f"max {lat[-1]:.1f} s "
                     f"over {len(lat)} of {c.entries} entries")
    if c.entries and c.nodes:
        lines.append(f"complete within {ON_TIME_S:.0f} s of publication: {c.on_time_share:.1%} "
                     f"of (node, entry) pairs")
        worst = c.worst_served()
        if worst and c.nodes > 1:
            lines.append(f"worst served (share of the {c.entries} entries within "
                         f"{ON_TIME_S:.0f} s; held at the end): " + ", ".join(
                             f"{node} {on_time / c.entries:.1%} ({held})"
                             for node, on_time, held in worst))
    return lines


def format_summary(s: Summary) -> str:
    """The summary table printed at the end of ``tinyssb sim run``."""
    m, c = s.meta, s.convergence
    head = (f"scenario {m.get('scenario', '?')}: {c.nodes} nodes, seed {m.get('seed', '?')}, "
            f"policy {m.get('policy', '?')}, radio {m.get('profile', '?')}, "
            f"{_seconds(float(m.get('duration', s.end)))} virtual")
    lines = [head, *convergence_lines(c)]
    lines.append("")
    lines.append(f"{'kind':<10} {'frames':>9} {'airtime s':>11} {'bytes':>11}")
    for kind in sorted(s.tx_frames, key=lambda k: (-s.tx_airtime.get(k, 0.0), k)):
        lines.append(f"{kind:<10} {s.tx_frames[kind]:>9} {s.tx_airtime.get(kind, 0.0):>11.1f} "
                     f"{s.tx_bytes[kind]:>11}")
    total_air = sum(s.tx_airtime.values())
    lines.append(f"{'total':<10} {sum(s.tx_frames.values()):>9} {total_air:>11.1f} "
                 f"{sum(s.tx_bytes.values()):>11}")
    hours = max(s.end, float(m.get("duration", 0.0))) / 3600
    if c.nodes and hours:
        duty = float(m.get("duty_cycle", 0.0))
        rate = f"{total_air / c.nodes / hours:.1f} s per hour; " if hours >= 1 else ""
        limit = f"duty-cycle limit {duty:.1%} of any hour = {duty * 3600:.0f} s" if duty else ""
        note = f" ({rate}{limit})" if rate or limit else ""
        lines.append(f"airtime per node: {total_air / c.nodes:.1f} s in {hours:.2f} h{note}")
    if any(s.duty_bound.values()) and hours:
        lines.append(_duty_line(s, hours * 3600))
    bound = m.get("airtime_lower_bound_s")
    if bound and total_air > 0:
        lines.append(f"airtime lower bound: {bound:.1f} s ({m.get('lower_bound_broadcasts')} "
                     f"broadcasts of {m.get('lower_bound_items')} items, docs/simulator.md); "
                     f"this run spent {total_air / bound:.1f}x that: efficiency "
                     f"{bound / total_air:.1%}")
    headroom = m.get("receive_headroom")
    if headroom is not None:
        short = m.get("receive_short") or []
        lines.append(f"receive headroom: {m.get('receive_headroom_node')}, the tightest node, "
                     f"could hear at most {headroom:.1f}x the airtime of the items it must "
                     "receive (docs/simulator.md); "
                     + (f"{len(short)} cannot receive every item, whatever the policy: "
                        + ", ".join(short[:10]) + (" ..." if len(short) > 10 else "")
                        if short else "every node could"))
    lines.append("")
    lines.append(f"frames received: {s.rx_frames}; collisions: {s.collisions}")
    if s.drops:
        lines.append("drops: " + ", ".join(f"{reason} {n}" for reason, n
                                           in sorted(s.drops.items(), key=lambda x: -x[1])))
    for note in s.notes:
        lines.extend(["", note])
    return "\n".join(lines)
