"""Scenario files: a mesh described in TOML, checked before anything runs.

A scenario names the radio profile, where the nodes stand, who publishes what and for
how long the mesh runs. ``docs/simulator.md`` documents every key; the shipped
scenarios live in ``firmware_sim/scenarios``. Mistakes are reported as one
:class:`ScenarioError` naming the file, the line and the key: an unknown key, a value
of the wrong type, radio settings the radio cannot have, and a layout in which some
node can reach nobody (judged by the median path loss against the receiver's
sensitivity, plus BLE range and explicit links).
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

from gateway.replication.policy import PRESETS
from gateway.tomllines import TomlLines
from gateway.wire.lora import PROFILES, LoRaParams

from . import topology
from .engine import derive_seed
from .links import BLE_LATENCY_S, BLE_RANGE_M, BLE_RATE_BPS, IP_LATENCY_S, LinkKind
from .phy import BANDWIDTHS_HZ, PATH_LOSS_PRESETS, SPREADING_FACTORS, PathLoss, airtime
from .phy import sensitivity_dbm as _sensitivity

__all__ = [
    "BleSpec",
    "FeedSpec",
    "LinkSpec",
    "NodeSpec",
    "RadioSpec",
    "Scenario",
    "ScenarioError",
    "load_scenario",
    "parse_scenario",
    "shipped_scenarios",
]

FULL_FRAME = 124  # a 120-byte packet and its CRC32 trailer
REFERENCE_TX_POWER_DBM = 20
"""What the reference firmware transmits with, in every region: the simulator's default
(the gateway's profiles default to the region's legal power instead)."""
LAYOUTS = ("line", "grid", "random", "explicit")
RADIOS = ("lora", "ble")


class ScenarioError(ValueError):
    """A scenario file that cannot run; the message names file, line and key."""

    def __init__(self, source: str, line: int | None, key: str, message: str) -> None:
        where = f"{source}:{line}" if line else source
        super().__init__(f"{where}: {key}: {message}")
        self.source, self.line, self.key = source, line, key


# --- what a scenario holds ------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class RadioSpec:
    profile: str
    params: LoRaParams
    duty_cycle: float
    duty_window: float
    min_gap: float
    path_loss: PathLoss


@dataclass(frozen=True, slots=True)
class NodeSpec:
    name: str
    x: float
    y: float
    radios: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FeedSpec:
    label: str
    authors: tuple[str, ...]
    entries: int
    interval: float
    start: float
    size: int
    stagger: bool


@dataclass(frozen=True, slots=True)
class LinkSpec:
    kind: LinkKind
    a: str
    b: str
    latency: float
    rate_bps: float


@dataclass(frozen=True, slots=True)
class BleSpec:
    range_m: float
    latency: float
    rate_bps: float


@dataclass(frozen=True, slots=True)
class ChatSpec:
    """Client ``src`` sends ``messages`` c2c messages to ``dst`` through the ISP."""

    src: str
    dst: str
    messages: int
    interval: float
    start: float
    size: int


@dataclass(frozen=True, slots=True)
class IspSpec:
    """A tinyISP contract setup: one ISP node, its clients, their chats, a farewell."""

    node: str
    clients: tuple[str, ...]
    onboard: float  # when the clients send their onboarding requests
    feed_entries: int  # entries per data feed, ``prev`` and ``next`` included
    max_unfinished: int  # data feeds a writer may have unfinished before it pauses
    chats: tuple[ChatSpec, ...]
    farewell_client: str | None
    farewell_at: float | None


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    description: str
    source: str
    seed: int
    duration: float
    policy: str
    radio: RadioSpec
    ble: BleSpec
    nodes: tuple[NodeSpec, ...]
    feeds: tuple[FeedSpec, ...]
    links: tuple[LinkSpec, ...]
    isp: IspSpec | None = None

    def with_(self, **changes: Any) -> Scenario:
        return replace(self, **changes)

    def ble_links(self) -> list[tuple[str, str]]:
        """Pairs of BLE nodes within BLE range of each other."""
        ble = [n for n in self.nodes if "ble" in n.radios]
        return [(a.name, b.name) for i, a in enumerate(ble) for b in ble[i + 1:]
                if math.hypot(a.x - b.x, a.y - b.y) <= self.ble.range_m]


# --- reading values -------------------------------------------------------------------

_TIME = re.compile(r"^\s*(\d+(?:\.\d*)?)\s*(ms|s|m|min|h|d)?\s*$")
_UNITS = {None: 1.0, "ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0,
          "d": 86400.0}


class _Table:
    """One TOML table being read: typed getters that report errors with the key's line."""

    def __init__(self, parser: _Parser, data: Mapping[str, Any], table: str,
                 index: int | None, label: str) -> None:
        self.p, self.data, self.table, self.index, self.label = parser, data, table, index, label
        self.used: set[str] = set()

    def fail(self, key: str, message: str) -> ScenarioError:
        line = self.p.lines.find(self.table, self.index, key)
        return ScenarioError(self.p.source, line, f"{self.label}{key}", message)

    def check_keys(self, allowed: tuple[str, ...]) -> None:
        for key in self.data:
            if key not in allowed:
                raise self.fail(key, f"unknown key; expected one of: {', '.join(allowed)}")

    def has(self, key: str) -> bool:
        return key in self.data

    def raw(self, key: str, default: Any) -> Any:
        self.used.add(key)
        if key not in self.data:
            if default is _REQUIRED:
                raise self.fail(key, "missing")
            return default
        return self.data[key]

    def text(self, key: str, default: Any = None) -> Any:
        value = self.raw(key, default)
        if value is not default and not isinstance(value, str):
            raise self.fail(key, f"must be a string, got {value!r}")
        return value

    def integer(self, key: str, default: Any = None, low: int | None = None,
                high: int | None = None) -> Any:
        value = self.raw(key, default)
        if value is default:
            return value
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, f"must be a whole number, got {value!r}")
        self._bounds(key, value, low, high)
        return value

    def number(self, key: str, default: Any = None, low: float | None = None,
               high: float | None = None, positive: bool = False) -> Any:
        value = self.raw(key, default)
        if value is default:
            return value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(key, f"must be a number, got {value!r}")
        if positive and not value > 0:
            raise self.fail(key, f"must be greater than 0, got {value!r}")
        self._bounds(key, value, low, high)
        return float(value)

    def seconds(self, key: str, default: Any = None, positive: bool = False) -> Any:
        """A duration: a number of seconds or a string such as ``"90s"``, ``"2h"``."""
        value = self.raw(key, default)
        if value is default:
            return value
        if isinstance(value, str):
            m = _TIME.match(value)
            if m is None:
                raise self.fail(key, f"must be seconds or a duration like \"15m\", \"2h\", "
                                     f"got {value!r}")
            value = float(m.group(1)) * _UNITS[m.group(2)]
        elif isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(key, f"must be seconds or a duration like \"2h\", got {value!r}")
        if value < 0 or (positive and value == 0):
            raise self.fail(key, f"must be {'greater than' if positive else 'at least'} 0")
        return float(value)

    def flag(self, key: str, default: bool) -> bool:
        value = self.raw(key, default)
        if not isinstance(value, bool):
            raise self.fail(key, f"must be true or false, got {value!r}")
        return value

    def point(self, key: str) -> tuple[float, float]:
        value = self.raw(key, [0.0, 0.0])
        if (not isinstance(value, list) or len(value) != 2
                or not all(isinstance(v, int | float) and not isinstance(v, bool)
                           for v in value)):
            raise self.fail(key, f"must be [x, y] in metres, got {value!r}")
        return float(value[0]), float(value[1])

    def choice(self, key: str, options: tuple[str, ...] | list[str], default: Any = None
               ) -> Any:
        value = self.text(key, default)
        if value is not default and value not in options:
            raise self.fail(key, f"unknown value {value!r}; expected one of: "
                                 f"{', '.join(options)}")
        return value

    def _bounds(self, key: str, value: float, low: float | None, high: float | None) -> None:
        if (low is not None and value < low) or (high is not None and value > high):
            raise self.fail(key, f"must be in {low}..{high}, got {value!r}")


_REQUIRED = object()


# --- the parser -----------------------------------------------------------------------

_TOP = ("name", "description", "seed", "duration", "policy", "radio", "ble", "nodes",
        "feeds", "links", "isp", "chats")
_ISP = ("node", "clients", "onboard", "feed_entries", "max_unfinished", "farewell")
_FAREWELL = ("client", "at")
_CHATS = ("from", "to", "messages", "interval", "start", "size")
_RADIO = ("profile", "frequency", "bandwidth", "sf", "cr", "tx_power", "duty_cycle",
          "duty_window", "min_gap", "path_loss", "d0", "pl_d0", "gamma", "sigma")
_BLE = ("range", "latency", "rate")
_NODES_COMMON = ("layout", "prefix", "radios", "origin")
_NODES = {
    "line": ("count", "spacing"),
    "grid": ("rows", "cols", "spacing"),
    "random": ("count", "width", "height", "seed"),
    "explicit": ("points",),
}
_FEEDS = ("authors", "entries", "interval", "start", "size", "stagger")
_LINKS = ("kind", "a", "b", "latency", "rate")


def _two_ends(t: _Table, keys: tuple[str, str], allowed: Collection[str],
              unknown: Callable[[str], str], same: str) -> tuple[str, str]:
    """Two different names from ``allowed`` under ``keys`` (a link's or a chat's ends)."""
    ends = []
    for key in keys:
        name = t.text(key, _REQUIRED)
        if name not in allowed:
            raise t.fail(key, unknown(name))
        ends.append(name)
    if ends[0] == ends[1]:
        raise t.fail(keys[1], same)
    return ends[0], ends[1]


class _Parser:
    def __init__(self, text: str, source: str) -> None:
        self.source = source
        self.lines = TomlLines(text)
        try:
            self.data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            m = re.search(r"line (\d+)", str(exc))
            raise ScenarioError(source, int(m.group(1)) if m else None, "syntax",
                                f"not valid TOML: {exc}") from None

    def parse(self, default_name: str) -> Scenario:
        top = _Table(self, self.data, "", None, "")
        top.check_keys(_TOP)
        name = top.text("name", default_name)
        description = top.text("description", "")
        seed = top.integer("seed", 1, 0, 2**63 - 1)
        duration = top.seconds("duration", _REQUIRED, positive=True)
        policy = top.choice("policy", sorted(PRESETS), "default")
        radio = self._radio(self._table(top, "radio"))
        ble = self._ble(self._table(top, "ble"))
        nodes, origin_of = self._nodes(top, seed)
        names = [n.name for n in nodes]
        feeds = tuple(self._feed(t, i, names, duration)
                      for i, t in enumerate(self._array(top, "feeds")))
        links = tuple(self._link(t, names) for t in self._array(top, "links"))
        isp = self._isp(top, names, duration)
        scenario = Scenario(name, description, self.source, seed, duration, policy, radio,
                            ble, tuple(nodes), feeds, links, isp)
        self._check_ble_links(scenario)
        self._check_reachable(scenario, origin_of)
        return scenario

    # tables and arrays of tables
    def _table(self, parent: _Table, key: str) -> _Table:
        value = parent.data.get(key, {})
        if not isinstance(value, dict):
            raise parent.fail(key, "must be a table")
        return _Table(self, value, key, None, f"{key}.")

    def _array(self, parent: _Table, key: str) -> Iterator[_Table]:
        value = parent.data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise parent.fail(key, f"must be an array of tables ([[{key}]])")
        for i, item in enumerate(value):
            yield _Table(self, item, key, i, f"{key}[{i}].")

    # [radio]
    def _radio(self, t: _Table) -> RadioSpec:
        t.check_keys(_RADIO)
        name = t.choice("profile", list(PROFILES), "EU868.a")
        base = PROFILES[name]
        overrides: dict[str, Any] = {}
        freq = t.integer("frequency", None, 137_000_000, 1_020_000_000)
        if freq is not None:
            overrides["frequency_hz"] = freq
        bw = t.integer("bandwidth")
        if bw is not None:
            if bw not in BANDWIDTHS_HZ:
                raise t.fail("bandwidth", f"{bw} Hz is not a LoRa bandwidth the simulator "
                                          "models; use 125000, 250000 or 500000")
            overrides["bandwidth_hz"] = bw
        sf = t.integer("sf")
        if sf is not None:
            if sf not in SPREADING_FACTORS:
                raise t.fail("sf", f"spreading factor {sf} is impossible here; use 7..12")
            overrides["sf"] = sf
        cr = t.integer("cr", None, 5, 8)
        if cr is not None:
            overrides["cr"] = cr
        # the mesh the simulator models is the reference firmware's, which transmits at
        # 20 dBm whatever the region; a scenario may set another power
        overrides["tx_power_dbm"] = t.integer("tx_power", REFERENCE_TX_POWER_DBM, -9, 22)
        params = replace(base, **overrides)
        duty = t.number("duty_cycle", 0.01, 0.0, 1.0)
        window = t.seconds("duty_window", 3600.0, positive=True)
        if duty and airtime(params, FULL_FRAME) > duty * window:
            raise t.fail("duty_cycle" if t.has("duty_cycle") else "duty_window",
                         f"a full {FULL_FRAME}-byte frame takes "
                         f"{airtime(params, FULL_FRAME):.3f} s on air, more than "
                         f"{duty:g} of {window:g} s allows: nothing could ever be sent")
        min_gap = t.seconds("min_gap", 0.0)
        model = t.choice("path_loss", list(PATH_LOSS_PRESETS), "log-distance")
        loss = PATH_LOSS_PRESETS[model]
        loss = replace(loss, d0_m=t.number("d0", loss.d0_m, positive=True),
                       pl_d0_db=t.number("pl_d0", loss.pl_d0_db),
                       gamma=t.number("gamma", loss.gamma, positive=True),
                       sigma_db=t.number("sigma", loss.sigma_db, 0.0, 30.0))
        return RadioSpec(name, params, duty, window, min_gap, loss)

    # [ble]
    def _ble(self, t: _Table) -> BleSpec:
        t.check_keys(_BLE)
        return BleSpec(t.number("range", BLE_RANGE_M, positive=True),
                       t.seconds("latency", BLE_LATENCY_S),
                       t.number("rate", BLE_RATE_BPS, positive=True))

    # [[nodes]]
    def _nodes(self, top: _Table, seed: int) -> tuple[list[NodeSpec], dict[str, tuple[_Table, str]]]:
        nodes: list[NodeSpec] = []
        origin_of: dict[str, tuple[_Table, str]] = {}  # node -> (group, key to blame)
        groups = list(self._array(top, "nodes"))
        if not groups:
            raise top.fail("nodes", "missing: add at least one [[nodes]] group")
        for i, t in enumerate(groups):
            layout = t.choice("layout", LAYOUTS, _REQUIRED)
            t.check_keys(_NODES_COMMON + _NODES[layout])
            prefix = t.text("prefix", "n")
            origin = t.point("origin")
            radios = t.raw("radios", ["lora"])
            if (not isinstance(radios, list) or not radios
                    or any(r not in RADIOS for r in radios)):
                raise t.fail("radios", f"must be a non-empty list of {', '.join(RADIOS)}; "
                                       f"got {radios!r}")
            points, blame = self._layout(t, layout, prefix, origin, seed, i)
            for name, x, y in points:
                if name in origin_of:
                    raise t.fail("prefix" if layout != "explicit" else "points",
                                 f"node name {name!r} is used twice")
                origin_of[name] = (t, blame if layout != "explicit" else f"name:{name}")
                nodes.append(NodeSpec(name, x, y, tuple(dict.fromkeys(radios))))
        return nodes, origin_of

    def _layout(self, t: _Table, layout: str, prefix: str, origin: tuple[float, float],
                seed: int, group: int) -> tuple[list[topology.Point], str]:
        if layout == "line":
            return topology.line(prefix, t.integer("count", _REQUIRED, 1, 10_000),
                                 t.number("spacing", _REQUIRED, positive=True), origin), "spacing"
        if layout == "grid":
            return topology.grid(prefix, t.integer("rows", _REQUIRED, 1, 1000),
                                 t.integer("cols", _REQUIRED, 1, 1000),
                                 t.number("spacing", _REQUIRED, positive=True), origin), "spacing"
        if layout == "random":
            layout_seed = t.integer("seed", derive_seed(seed, "layout", group), 0)
            return topology.random_geometric(
                prefix, t.integer("count", _REQUIRED, 1, 10_000),
                t.number("width", _REQUIRED, positive=True),
                t.number("height", _REQUIRED, positive=True), layout_seed, origin), "width"
        raw = t.raw("points", _REQUIRED)
        if not isinstance(raw, list) or not raw:
            raise t.fail("points", "must be a non-empty list of {name, x, y} tables")
        points: list[topology.Point] = []
        for p in raw:
            ok = (isinstance(p, dict) and set(p) == {"name", "x", "y"}
                  and isinstance(p["name"], str) and p["name"]
                  and all(isinstance(p[k], int | float) and not isinstance(p[k], bool)
                          for k in ("x", "y")))
            if not ok:
                raise t.fail("points", f"each point is {{name = \"...\", x = metres, "
                                       f"y = metres}}, got {p!r}")
            points.append((p["name"], origin[0] + float(p["x"]), origin[1] + float(p["y"])))
        return points, "points"

    # [[feeds]]
    def _feed(self, t: _Table, index: int, names: list[str], duration: float) -> FeedSpec:
        t.check_keys(_FEEDS)
        raw = t.raw("authors", _REQUIRED)
        if raw == "all":
            authors = tuple(names)
        elif isinstance(raw, list) and raw and all(isinstance(a, str) for a in raw):
            for a in raw:
                if a not in names:
                    raise t.fail("authors", f"unknown node {a!r}")
            authors = tuple(dict.fromkeys(raw))
        else:
            raise t.fail("authors", f"must be \"all\" or a list of node names, got {raw!r}")
        interval = t.seconds("interval", 60.0, positive=True)
        start = t.seconds("start", 0.0)
        if start >= duration:
            raise t.fail("start", f"{start:g} s is not before the end of the run "
                                  f"({duration:g} s)")
        room = int((duration - start) // interval) + 1  # publications that fit the run
        entries = t.integer("entries", room, 1, 100_000)
        size = t.integer("size", 100, 1, 64_000)
        return FeedSpec(f"feed{index}", authors, entries, interval, start, size,
                        t.flag("stagger", False))

    # [isp] and [[chats]]
    def _isp(self, top: _Table, names: list[str], duration: float) -> IspSpec | None:
        chats_given = top.has("chats")
        if not top.has("isp"):
            if chats_given:
                raise top.fail("chats", "chats travel through an ISP: add an [isp] table")
            return None
        t = self._table(top, "isp")
        t.check_keys(_ISP)
        node = t.text("node", _REQUIRED)
        if node not in names:
            raise t.fail("node", f"unknown node {node!r}")
        raw = t.raw("clients", _REQUIRED)
        if not (isinstance(raw, list) and raw and all(isinstance(c, str) for c in raw)):
            raise t.fail("clients", f"must be a list of node names, got {raw!r}")
        for c in raw:
            if c not in names or c == node:
                raise t.fail("clients", f"{c!r} is not a node other than the ISP")
        clients = tuple(dict.fromkeys(raw))
        onboard = t.seconds("onboard", 60.0)
        feed_entries = t.integer("feed_entries", 50, 3, 10_000)
        max_unfinished = t.integer("max_unfinished", 3, 1, 100)
        client = at = None
        if t.has("farewell"):
            f = self._table(t, "farewell")
            f.check_keys(_FAREWELL)
            client = f.text("client", _REQUIRED)
            if client not in clients:
                raise f.fail("client", f"{client!r} is not one of the ISP's clients")
            at = f.seconds("at", _REQUIRED)
            if at >= duration:
                raise f.fail("at", f"{at:g} s is not before the end of the run")
        chats = []
        for c in self._array(top, "chats"):
            c.check_keys(_CHATS)
            ends = _two_ends(c, ("from", "to"), clients,
                             lambda who: f"{who!r} is not one of the ISP's clients",
                             "a chat needs two different clients")
            chats.append(ChatSpec(ends[0], ends[1], c.integer("messages", _REQUIRED, 1, 100_000),
                                  c.seconds("interval", 60.0, positive=True),
                                  c.seconds("start", 0.0), c.integer("size", 40, 1, 10_000)))
        return IspSpec(node, clients, onboard, feed_entries, max_unfinished, tuple(chats),
                       client, at)

    # [[links]]
    def _link(self, t: _Table, names: list[str]) -> LinkSpec:
        t.check_keys(_LINKS)
        kind = LinkKind(t.choice("kind", [k.value for k in LinkKind], "ip"))
        ends = _two_ends(t, ("a", "b"), names, lambda name: f"unknown node {name!r}",
                         "a link needs two different nodes")
        ble = kind is LinkKind.BLE
        latency = t.seconds("latency", BLE_LATENCY_S if ble else IP_LATENCY_S)
        rate = t.number("rate", BLE_RATE_BPS if ble else math.inf, positive=True)
        return LinkSpec(kind, ends[0], ends[1], latency, rate)

    # checks over the whole scenario
    def _check_ble_links(self, s: Scenario) -> None:
        where = {n.name: n for n in s.nodes}
        for i, link in enumerate(s.links):
            if link.kind is not LinkKind.BLE:
                continue
            a, b = where[link.a], where[link.b]
            d = math.hypot(a.x - b.x, a.y - b.y)
            if d > s.ble.range_m:
                t = _Table(self, {}, "links", i, f"links[{i}].")
                raise t.fail("b", f"{link.a} and {link.b} are {d:.0f} m apart, beyond BLE "
                                  f"range ({s.ble.range_m:g} m; see [ble] range)")

    def _check_reachable(self, s: Scenario, origin_of: Mapping[str, tuple[_Table, str]]) -> None:
        edges = [(a, b) for a, b in lora_edges(s)]
        edges += s.ble_links()
        edges += [(link.a, link.b) for link in s.links]
        names = [n.name for n in s.nodes]
        groups = topology.components(names, edges)
        if len(groups) == 1:
            return
        stray = groups[-1][0]
        t, blame = origin_of[stray]
        node = next(n for n in s.nodes if n.name == stray)
        rest = [n for n in names if n not in groups[-1]]
        near, dist = topology.nearest([(n.name, n.x, n.y) for n in s.nodes], stray, rest)
        budget = s.radio.params.tx_power_dbm - _sensitivity(s.radio.params.sf,
                                                            s.radio.params.bandwidth_hz)
        reach = s.radio.path_loss.distance_for(budget)
        message = (f"node {stray} at ({node.x:g}, {node.y:g}) m cannot reach the rest of "
                   f"the mesh: the nearest other node {near} is {dist:.0f} m away, but "
                   f"LoRa reaches about {reach:.0f} m (median path loss vs. sensitivity, "
                   f"{budget:g} dB budget) and BLE {s.ble.range_m:g} m; move it closer or "
                   f"add a [[links]] entry")
        if blame.startswith("name:"):
            line = self.lines.find_text(t.table, t.index, f'"{stray}"')
            raise ScenarioError(self.source, line, f"{t.label}points", message)
        raise t.fail(blame, message)


def lora_edges(s: Scenario) -> Iterator[tuple[str, str]]:
    """Pairs of LoRa nodes whose median received power reaches the sensitivity."""
    params = s.radio.params
    budget = params.tx_power_dbm - _sensitivity(params.sf, params.bandwidth_hz)
    lora = [n for n in s.nodes if "lora" in n.radios]
    for i, a in enumerate(lora):
        for b in lora[i + 1:]:
            if s.radio.path_loss.median_db(math.hypot(a.x - b.x, a.y - b.y)) <= budget:
                yield a.name, b.name


# --- loading --------------------------------------------------------------------------

def parse_scenario(text: str, source: str = "<scenario>", default_name: str = "scenario"
                   ) -> Scenario:
    """A scenario from TOML text; ScenarioError names ``source``, line and key."""
    return _Parser(text, source).parse(default_name)


def _shipped_dir() -> Any:
    return resources.files("firmware_sim") / "scenarios"


def shipped_scenarios() -> dict[str, Any]:
    """Shipped scenario names -> their resource paths, sorted by name."""
    found = {p.name[:-5]: p for p in _shipped_dir().iterdir() if p.name.endswith(".toml")}
    return dict(sorted(found.items()))


def load_scenario(spec: str | Path) -> Scenario:
    """A shipped scenario by name, or a scenario file by path."""
    shipped = shipped_scenarios()
    text_path = Path(spec)
    if str(spec) in shipped and not text_path.exists():
        res = shipped[str(spec)]
        return parse_scenario(res.read_text(encoding="utf-8"), f"{spec}.toml", str(spec))
    if not text_path.is_file():
        known = ", ".join(shipped)
        raise ScenarioError(str(spec), None, "scenario",
                            f"no such scenario file or shipped scenario; shipped: {known}")
    try:
        text = text_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError(str(spec), None, "scenario", f"cannot read it: {exc}") from None
    return parse_scenario(text, str(spec), text_path.stem)
