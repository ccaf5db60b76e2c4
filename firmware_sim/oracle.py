"""The oracle: how well could replication do on this channel at all?

A scheduler that knows at every instant which items (feed keys, entries, side-chain
chunks) every node holds drives the scenario's radios on the simulator's own channel
model: the same positions, path loss and shadowing, collisions, half-duplex, duty cycle
and channel activity detection as ``tinyssb sim run``. No policy can know that much (a
tinySSB frame does not even name its sender), so what it reaches is a yardstick for the
policies, next to the airtime lower bound (:mod:`.bound`), which ignores the channel.

Each radio, when idle, looks at the items it holds that its neighbours lack and scores
each by the decode shares of the links to those neighbours (the share of the channel's
shadowing draws that reach the receiver's sensitivity). The best one goes out, items
younger than :data:`ON_TIME_S` weighted :data:`FRESH_WEIGHT` times and keys
:data:`KEY_WEIGHT` times (a feed's entries are no use without it), provided its score
reaches :data:`MIN_SCORE`. Before it goes the radio waits a random
``U(0, JITTER_AIRTIMES)`` airtimes and looks again: a neighbour may have sent it
meanwhile. Then it listens before talking, as the ``default`` preset's radios do. A
radio sends at most one frame per ``gap`` seconds, by default :data:`GAP_SHARE` of its
duty-cycle pace (a data frame's airtime over the duty cycle: 20.5 s on EU868 SF7 at 1 %),
so it may send twice as fast as its budget lasts while budget is left. Without a pace the
scheduler's radios, all with something useful to send, jam the channel: 3 hours of
city-100 without one left every entry late. city-100 over 24 h (seed 1): with gaps of
5 / 10 / 15 / 20.5 / 26 s, 9 / 0 / 0 / 24 / 135 late entries, p95 entry spread 47 / 85 /
176 / 367 / 2,261 s, on 86 / 76 / 69 / 62 / 55 ks of airtime.

With ``beacon`` set the scheduler knows less: each radio sends a beacon of what it holds
every ``beacon`` seconds (a WANT-sized frame, on the channel like any other, so it costs
airtime and is heard only where it is decoded). A radio pushes each item it gains once,
within :data:`PUSH_WINDOW` seconds, unless it heard the item twice; beyond that it sends
only what the last beacon it decoded from a neighbour showed missing, until it hears the
item on the air or sends it. That is knowledge a protocol could have: a WANT carries a
node's next sequence number per feed.

A node holds an entry once it holds the feed's key, the entry, every chunk of it and the
entry before (a log is stored in order). Each item's frame is its number padded to the
real length (an entry or chunk is 120 bytes plus the CRC trailer, a key a novelty): the
channel only needs the lengths, and identical frames are the same item. Only meshes of LoRa radios with plain feeds are
covered: BLE and IP links cost no airtime and tinyISP contracts are more than items.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from gateway.wire.crc import CRC_LEN
from gateway.wire.entry import PACKET_LEN
from gateway.wire.goset import Novelty

from .bound import decode_share, items_of
from .engine import Simulation, derive_seed
from .runner import publications
from .scenario import Scenario
from .summary import ON_TIME_S, Convergence, convergence_lines, spread_json, tally

__all__ = ["OracleError", "OracleResult", "check_scenario", "format_oracle", "oracle_json",
           "run_oracle"]

MIN_LINK = 0.05  # links that decode less often than this are no neighbours of the oracle
MIN_SCORE = 0.3  # decode shares summed over the neighbours lacking an item, to send it
FRESH_WEIGHT = 4.0  # items younger than ON_TIME_S first
KEY_WEIGHT = 3.0  # keys first: a feed's entries wait for its key
JITTER_AIRTIMES = 8.0  # random wait before a send, in airtimes of the frame
GAP_SHARE = 0.5  # least time between two frames of a radio, as a share of its duty pace
PUSH_WINDOW = 60.0  # with beacons: seconds after gaining an item in which it is pushed

_DATA_LEN = PACKET_LEN + CRC_LEN
_KEY_LEN = len(Novelty(bytes(range(1, 33))).encode()) + CRC_LEN
_KEY, _ENTRY, _CHUNK = 0, 1, 2
_KIND_NAMES = {_KEY: "novelty", _ENTRY: "entry", _CHUNK: "chunk"}
_BEACON_TAG = 1 << 62  # beacon frames are numbered from here (items from 0)


class OracleError(ValueError):
    """The scenario is not one the oracle covers."""


@dataclass(slots=True, frozen=True)
class OracleResult:
    scenario: str
    seed: int
    duration: float
    profile: str
    gap: float  # least seconds between two frames of one radio
    beacon: float | None  # seconds between beacons (None: the oracle knows everything)
    convergence: Convergence
    frames: dict[str, int]  # kind -> frames sent
    airtime: dict[str, float]  # kind -> seconds on air
    drops: dict[str, int] = field(default_factory=dict)  # channel losses by reason

    @property
    def late_entries(self) -> int:
        """Entries some node held completely only after ``ON_TIME_S``, or never."""
        return len(self.convergence.late)


@dataclass(slots=True)
class _Item:
    kind: int
    t_pub: float
    frame: bytes


def check_scenario(scenario: Scenario) -> None:
    """Raise :class:`OracleError` unless every node has a LoRa radio only and every
    publication is a plain feed."""
    if scenario.isp is not None:
        raise OracleError(f"{scenario.name} runs tinyISP contracts; the oracle covers "
                          "plain feeds only")
    if scenario.links or scenario.ble_links():
        raise OracleError(f"{scenario.name} has BLE or IP links; the oracle covers meshes "
                          "of LoRa radios only")
    if not scenario.nodes or any(set(n.radios) != {"lora"} for n in scenario.nodes):
        raise OracleError(f"{scenario.name}: every node needs a LoRa radio and nothing "
                          "else for the oracle")


class _Oracle:
    def __init__(self, scenario: Scenario, seed: int, gap: float | None) -> None:
        check_scenario(scenario)
        self.scenario, self.seed = scenario, seed
        radio = scenario.radio
        self.sim = Simulation(seed, path_loss=radio.path_loss)
        self.names = [n.name for n in scenario.nodes]
        self.index = {name: i for i, name in enumerate(self.names)}
        for i, spec in enumerate(scenario.nodes):
            self.sim.add_external(spec.name, spec.x, spec.y, radio.params, self._deliver(i),
                                  duty_cycle=radio.duty_cycle, duty_window=radio.duty_window)
            # listen before talk, with the backoff draws a Node of that name would use
            self.sim.members[spec.name].lbt = random.Random(derive_seed(seed, "lbt", spec.name))
        channel = self.sim.channel
        self.radio = [self.sim.members[name].radio for name in self.names]
        assert all(r is not None for r in self.radio)
        self.rng = random.Random(derive_seed(seed, "oracle"))
        n = len(self.names)
        self.links: list[list[tuple[int, float]]] = [[] for _ in range(n)]
        self.weight: list[dict[int, float]] = [{} for _ in range(n)]
        sigma = radio.path_loss.sigma_db
        for u in range(n):
            ru = self.radio[u]
            for v in range(n):
                rv = self.radio[v]
                if u == v or ru is None or rv is None:
                    continue
                if channel.radios[ru].key != channel.radios[rv].key:
                    continue
                w = decode_share(channel.median_rssi(ru, rv), channel.radios[rv].sensitivity,
                                 sigma)
                if w >= MIN_LINK:
                    self.links[u].append((v, w))
                    self.weight[u][v] = w
        self.data_air = channel.frame_airtime(self.radio[0] or 0, _DATA_LEN)
        self.gap = GAP_SHARE * self.data_air / radio.duty_cycle if gap is None else gap
        self.beacon: float | None = None
        self.items: list[_Item] = []
        self.by_frame: dict[bytes, int] = {}
        self.holds: list[set[int]] = [set() for _ in range(n)]
        self.useful: list[dict[int, float]] = [{} for _ in range(n)]  # item -> score
        self.got: dict[tuple[int, int], float] = {}  # (node, item) -> when
        self.armed: list[float | None] = [None for _ in range(n)]
        self.last_tx = [-math.inf] * n
        self.frames: Counter[str] = Counter()
        self.airtime: dict[str, float] = {}
        self.feeds: dict[tuple[str, str], int] = {}
        self.key_item: dict[int, int] = {}
        # per entry: (feed, number, author, t_pub, its items without the key)
        self.entries: list[tuple[int, int, int, float, list[int]]] = []
        for pub in publications(scenario, seed):
            self.sim.at(pub.t, self._publisher(pub.author, pub.label, pub.number, pub.size))

    # --- items ------------------------------------------------------------------------
    def _new_item(self, kind: int, t: float, length: int) -> int:
        i = len(self.items)
        frame = i.to_bytes(8, "big") + bytes(length - 8)
        self.items.append(_Item(kind, t, frame))
        self.by_frame[frame] = i
        return i

    def _publisher(self, author: str, label: str, number: int,
                   size: int) -> Callable[[float], None]:
        def publish(now: float) -> None:
            u = self.index[author]
            feed = self.feeds.setdefault((author, label), len(self.feeds))
            if feed not in self.key_item:
                self.key_item[feed] = self._new_item(_KEY, now, _KEY_LEN)
                self._gain(u, self.key_item[feed], now)
            own = [self._new_item(_ENTRY, now, _DATA_LEN)]
            own += [self._new_item(_CHUNK, now, _DATA_LEN)
                    for _ in range(items_of(size) - 1)]
            self.entries.append((feed, number, u, now, own))
            for i in own:
                self._gain(u, i, now)
        return publish

    def _deliver(self, v: int) -> Callable[[bytes, float, float], None]:
        def deliver(frame: bytes, rssi: float, snr: float) -> None:
            item = self.by_frame.get(frame)
            if item is not None and item not in self.holds[v]:
                self._gain(v, item, self.sim.now)
        return deliver

    def _gain(self, v: int, item: int, now: float) -> None:
        """``v`` holds ``item`` from now on: its neighbours need not send it to v, and v
        may send it to those that lack it."""
        self.holds[v].add(item)
        self.got[(v, item)] = now
        for u, _w in self.links[v]:
            scores = self.useful[u]
            s = scores.get(item)
            if s is not None:
                s -= self.weight[u][v]
                if s > 1e-9:
                    scores[item] = s
                else:
                    del scores[item]
        score = sum(w for x, w in self.links[v] if item not in self.holds[x])
        if score > 1e-9:
            self.useful[v][item] = score
            if self.armed[v] is None:  # an appointment looks at the new item anyway
                self._arm(v, now)

    # --- the radios -------------------------------------------------------------------
    def _arm(self, u: int, t: float) -> None:
        """Look at radio ``u`` again at ``t`` (or at its earlier appointment)."""
        armed = self.armed[u]
        if armed is not None and armed <= t:
            return
        self.armed[u] = t
        self.sim.at(t, lambda now: self._decide(u, now, t))

    def _free_at(self, u: int, now: float) -> float | None:
        """When radio ``u`` may start a frame (None: now)."""
        member = self.sim.members[self.names[u]]
        r = self.radio[u]
        assert r is not None
        busy = self.sim.channel.radios[r].busy_until
        if member.waiting:  # listening before talking
            return now + self.data_air
        if busy > now:
            return busy
        if now < self.last_tx[u] + self.gap:
            return self.last_tx[u] + self.gap
        return None

    def _candidates(self, u: int, now: float) -> dict[int, float]:
        """The items ``u`` could send now, with their scores."""
        return self.useful[u]

    def _worth(self, u: int, item: int) -> bool:
        """Is ``item`` still worth sending from ``u``?"""
        return self.useful[u].get(item, 0.0) >= MIN_SCORE

    def _best(self, u: int, now: float) -> int | None:
        best, best_p = None, 0.0
        items = self.items
        for item, score in self._candidates(u, now).items():
            if score < MIN_SCORE:
                continue
            it = items[item]
            p = score * (FRESH_WEIGHT if now - it.t_pub < ON_TIME_S else 1.0)
            if it.kind == _KEY:
                p *= KEY_WEIGHT
            if p > best_p:
                best, best_p = item, p
        return best

    def _decide(self, u: int, now: float, due: float) -> None:
        if self.armed[u] != due:
            return  # an earlier appointment took its place
        self.armed[u] = None
        later = self._free_at(u, now)
        if later is not None:
            self._arm(u, later)
            return
        item = self._best(u, now)
        if item is None:
            return  # nothing to send until u gains an item (_gain arms it)
        air = self.sim.channel.frame_airtime(self.radio[u] or 0, len(self.items[item].frame))
        wait = self.rng.uniform(0.0, JITTER_AIRTIMES * air)
        self.armed[u] = now + wait
        self.sim.at(now + wait, lambda t: self._send(u, item, t, now + wait))

    def _send(self, u: int, item: int, now: float, due: float) -> None:
        if self.armed[u] != due:
            return
        self.armed[u] = None
        if not self._worth(u, item) or self._free_at(u, now) is not None:
            self._arm(u, now)  # sent by a neighbour meanwhile, or the radio is busy
            return
        r = self.radio[u]
        assert r is not None
        it = self.items[item]
        air = self.sim.channel.frame_airtime(r, len(it.frame))
        if self._wait_for_budget(u, now, air):
            return
        self._transmit(u, _KIND_NAMES[it.kind], it.frame, air, now)

    def _wait_for_budget(self, u: int, now: float, air: float) -> bool:
        """Does radio ``u``'s duty-cycle budget hold a frame of ``air`` seconds back? Then
        it is armed again for when the budget allows it."""
        r = self.radio[u]
        assert r is not None
        budget = self.sim.channel.radios[r].budget
        if budget is None or budget.allows(now, air):
            return False
        self._arm(u, budget.earliest(now, air))
        return True

    def _transmit(self, u: int, kind: str, frame: bytes, air: float, now: float) -> None:
        self.frames[kind] += 1
        self.airtime[kind] = self.airtime.get(kind, 0.0) + air
        self.last_tx[u] = now
        self.sim.external_transmit(self.names[u], frame)
        self._arm(u, now + air)

    # --- the result -------------------------------------------------------------------
    def result(self) -> OracleResult:
        sc = self.scenario
        n = len(self.names)
        got = self.got
        done: dict[tuple[int, int, int], float | None] = {}  # (node, feed, number) -> t

        def completed(feed: int, number: int, author: int, t_pub: float,
                      own: list[int]) -> list[float | None]:
            """When each node held the entry: its key, its items and the entry before."""
            key = self.key_item[feed]
            times: list[float | None] = []
            for v in range(n):
                got_at = [got.get((v, key))] + [got.get((v, i)) for i in own]
                before = done.get((v, feed, number - 1), 0.0) if number > 1 else 0.0
                t: float | None = None
                if before is not None and all(x is not None for x in got_at):
                    t = max([before, *(x for x in got_at if x is not None)])
                if v == author:
                    t = t_pub
                done[(v, feed, number)] = t
                times.append(t)
            return times

        entries = sorted(self.entries, key=lambda e: e[1])  # predecessors first
        convergence = tally(self.names, ((e[3], completed(*e)) for e in entries))
        if not entries:  # nothing published: the oracle reports no convergence
            convergence = replace(convergence, converged=False, time=None)
        return OracleResult(sc.name, self.seed, sc.duration, sc.radio.profile, self.gap,
                            self.beacon, convergence, dict(self.frames), self.airtime,
                            dict(self.sim.stats.drops))


class _BeaconOracle(_Oracle):
    """The oracle knowing only what beacons told (module notes)."""

    def __init__(self, scenario: Scenario, seed: int, gap: float | None,
                 beacon: float) -> None:
        if not beacon > 0:
            raise OracleError(f"a beacon period must be positive, got {beacon}")
        self.beacon_of: dict[bytes, int] = {}  # beacon frame -> its sender
        super().__init__(scenario, seed, gap)
        n = len(self.names)
        self.beacon = beacon
        self.pushes: list[dict[int, list[float]]] = [{} for _ in range(n)]  # item -> [t, copies]
        self.shown: list[dict[int, set[int]]] = [{} for _ in range(n)]  # neighbour -> lacks
        self.repairs: list[dict[int, float]] = [{} for _ in range(n)]  # item -> score
        self.beacon_due = [self.rng.uniform(0.0, beacon) for _ in range(n)]
        self.asleep = [False] * n  # armed only for the next beacon
        for u in range(n):
            self._arm(u, self.beacon_due[u])

    def _deliver(self, v: int) -> Callable[[bytes, float, float], None]:
        def deliver(frame: bytes, rssi: float, snr: float) -> None:
            sender = self.beacon_of.get(frame)
            if sender is not None:
                self._on_beacon(v, sender)
                return
            item = self.by_frame.get(frame)
            if item is None:
                return
            self._served(v, item)
            if item not in self.holds[v]:
                self._gain(v, item, self.sim.now)
                self.pushes[v][item][1] = 1.0  # the copy it came with
                return
            push = self.pushes[v].get(item)
            if push is not None:
                push[1] += 1
                if push[1] >= 2:
                    del self.pushes[v][item]
        return deliver

    def _gain(self, v: int, item: int, now: float) -> None:
        self.holds[v].add(item)
        self.got[(v, item)] = now
        self.pushes[v][item] = [now, 0.0]
        self._wake(v, now)

    def _wake(self, u: int, now: float) -> None:
        if self.armed[u] is None or self.asleep[u]:
            self.asleep[u] = False
            self._arm(u, now)

    def _served(self, u: int, item: int) -> None:
        """``u`` heard or sent ``item``: the lacks beacons showed of it count as repaired."""
        if self.repairs[u].pop(item, None) is not None:
            for lacks in self.shown[u].values():
                lacks.discard(item)

    def _on_beacon(self, u: int, v: int) -> None:
        w = self.weight[u].get(v)
        if w is None:
            return
        scores = self.repairs[u]
        for i in self.shown[u].get(v, ()):
            s = scores.get(i)
            if s is not None:
                if s - w > 1e-9:
                    scores[i] = s - w
                else:
                    del scores[i]
        lacks = self.holds[u] - self.holds[v]
        self.shown[u][v] = lacks
        for i in lacks:
            scores[i] = scores.get(i, 0.0) + w
        if lacks:
            self._wake(u, self.sim.now)

    def _candidates(self, u: int, now: float) -> dict[int, float]:
        pushes = self.pushes[u]
        for item in [i for i, (t, _c) in pushes.items() if now - t > PUSH_WINDOW]:
            del pushes[item]
        scores = dict(self.repairs[u])
        for item in pushes:
            scores[item] = scores.get(item, 0.0) + 1.0
        return scores

    def _worth(self, u: int, item: int) -> bool:
        return item in self.pushes[u] or self.repairs[u].get(item, 0.0) >= MIN_SCORE

    def _send(self, u: int, item: int, now: float, due: float) -> None:
        super()._send(u, item, now, due)
        if self.last_tx[u] == now:  # it went out: pushed, and repaired as far as we know
            self.pushes[u].pop(item, None)
            self._served(u, item)

    def _decide(self, u: int, now: float, due: float) -> None:
        if self.armed[u] == due and self._free_at(u, now) is None and now >= self.beacon_due[u]:
            self.armed[u] = None
            self._send_beacon(u, now)
            return
        super()._decide(u, now, due)
        if self.armed[u] is None:  # nothing to send: wake for the next beacon
            self._arm(u, self.beacon_due[u])
            self.asleep[u] = True

    def _send_beacon(self, u: int, now: float) -> None:
        if self._wait_for_budget(u, now, self.data_air):
            return
        assert self.beacon is not None
        self.beacon_due[u] = now + self.beacon
        frame = (_BEACON_TAG + len(self.beacon_of)).to_bytes(8, "big") + bytes(_DATA_LEN - 8)
        self.beacon_of[frame] = u
        self._transmit(u, "beacon", frame, self.data_air, now)


def run_oracle(scenario: Scenario, *, seed: int | None = None, gap: float | None = None,
               beacon: float | None = None,
               progress: Callable[[float], None] | None = None) -> OracleResult:
    """Run ``scenario`` under the oracle (module notes); ``gap``: least seconds between
    two frames of one radio (default: ``GAP_SHARE`` of the duty-cycle pace of a data
    frame); ``beacon``: seconds between the beacons that are then all it knows."""
    seed = scenario.seed if seed is None else seed
    oracle = (_Oracle(scenario, seed, gap) if beacon is None
              else _BeaconOracle(scenario, seed, gap, beacon))
    oracle.sim.run(scenario.duration, progress=progress)
    return oracle.result()


def format_oracle(r: OracleResult) -> str:
    """What ``tinyssb sim oracle`` prints: the lines of ``tinyssb sim run`` that compare."""
    c = r.convergence
    hours = r.duration / 3600
    lines = [(f"oracle on scenario {r.scenario}: {c.nodes} nodes, seed {r.seed}, radio "
              f"{r.profile}, {r.duration:.1f} s ({hours:.2f} h) virtual"),
             (f"(a scheduler that knows what every node holds: each radio sends what its "
              f"neighbours lack, at most one frame per {r.gap:.1f} s, after a random wait "
              f"and listening before talking; no requests, no claims; docs/simulator.md)"
              if r.beacon is None else
              f"(a scheduler that knows what the beacons told: each radio beacons what it "
              f"holds every {r.beacon:g} s, pushes what it gains once and repairs what "
              f"the beacons it heard showed missing, at most one frame per {r.gap:.1f} s, "
              f"after a random wait and listening before talking; docs/simulator.md)"),
             *convergence_lines(c)]
    if c.entries:
        lines.append(f"late entries (some node complete after {ON_TIME_S:.0f} s, or never): "
                     f"{r.late_entries} of {c.entries}")
    lines.append("")
    lines.append(f"{'kind':<10} {'frames':>9} {'airtime s':>11}")
    for kind in sorted(r.frames, key=lambda k: (-r.airtime.get(k, 0.0), k)):
        lines.append(f"{kind:<10} {r.frames[kind]:>9} {r.airtime.get(kind, 0.0):>11.1f}")
    lines.append(f"{'total':<10} {sum(r.frames.values()):>9} {sum(r.airtime.values()):>11.1f}")
    if r.drops:
        lines.append("lost at receivers: " + ", ".join(
            f"{reason} {n}" for reason, n in sorted(r.drops.items(), key=lambda kv: -kv[1])))
    return "\n".join(lines)


def oracle_json(r: OracleResult) -> dict[str, object]:
    """:func:`format_oracle` as numbers (``tinyssb sim oracle --json``)."""
    c = r.convergence
    return {
        "scenario": r.scenario, "seed": r.seed, "duration_s": r.duration,
        "profile": r.profile, "gap_s": r.gap, "beacon_s": r.beacon,
        "converged": c.converged, "convergence_t": c.time, "nodes": c.nodes,
        "entries": c.entries, "share": c.share, "on_time_share": c.on_time_share,
        "late_entries": r.late_entries,
        "spread": spread_json(c.latencies),
        "tx": {kind: {"frames": n, "airtime_s": r.airtime.get(kind, 0.0)}
               for kind, n in sorted(r.frames.items())},
        "drops": dict(r.drops),
    }
