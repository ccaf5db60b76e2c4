"""The airtime lower bound of a scenario: what delivering its items must cost at least.

Every item (an entry, a side-chain chunk) has to reach every node. Over LoRa that takes
broadcasts by a set of nodes that starts at the item's author, is connected (each
broadcaster heard the item from an earlier one) and dominates the link graph (every
node is a broadcaster or a neighbour of one): a connected dominating set rooted at the
author. The smallest such set is NP-hard to find; the greedy approximation used here
(Guha and Khuller's first algorithm: grow from the author, always adding the covered
node that covers the most uncovered ones) is within a logarithmic factor of it and in
practice close. The bound is the sum over items of that set's size times the item's
airtime on the air (120 bytes plus the CRC trailer).

The link graph is the channel model's own: a LoRa link wherever the median received
power reaches the receiver's sensitivity (:meth:`LoRaChannel.reachable`, the rule the
scenario check uses). Point-to-point links (BLE, IP) cost no airtime: a LoRa island
reached only through them is covered from its best entry node. Nodes that no path
reaches are left out. The bound ignores losses, collisions and the duty cycle, so a real
policy can only approach it.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass

import networkx as nx

from gateway.wire.crc import CRC_LEN
from gateway.wire.entry import PACKET_LEN, build_chain20

from .channel import LoRaChannel, shadow_levels
from .scenario import Scenario

__all__ = ["AirtimeBound", "Headroom", "decode_share", "greedy_cds", "items_of", "lower_bound",
           "receive_headroom"]


@dataclass(slots=True, frozen=True)
class AirtimeBound:
    seconds: float  # airtime of every item's broadcasts, summed
    items: int  # entries and chunks published
    broadcasts: int  # broadcasts of every item, summed
    frame_airtime: float  # seconds on air of one item's frame

    def efficiency(self, airtime: float) -> float | None:
        """The bound as a share of a run's airtime (1.0: the run spent no more)."""
        return self.seconds / airtime if airtime > 0 else None


def greedy_cds(graph: nx.Graph, root: str) -> set[str]:
    """A connected set of nodes, holding ``root``, that dominates ``root``'s component."""
    chosen = {root}
    covered = {root, *graph[root]}
    component = nx.node_connected_component(graph, root)
    while covered != component:
        best, gain = None, 0
        for v in sorted(covered - chosen):  # sorted: the same answer every run
            g = len(set(graph[v]) - covered)
            if g > gain:
                best, gain = v, g
        if best is None:  # cannot happen in a connected component
            break
        chosen.add(best)
        covered |= set(graph[best])
    return chosen


def _lora_channel(scenario: Scenario) -> tuple[LoRaChannel, dict[str, int]]:
    """The scenario's LoRa radios on a channel model of their own (no run's draws), and
    each node's radio index."""
    channel = LoRaChannel(scenario.radio.path_loss, random.Random(0))
    index = {n.name: channel.add_radio(n.name, n.x, n.y, scenario.radio.params)
             for n in scenario.nodes if "lora" in n.radios}
    return channel, index


def items_of(size: int) -> int:
    """Items of one publication of ``size`` bytes: the entry and its side-chain chunks."""
    return 1 + len(build_chain20(bytes(size))[1])


def _lora_graph(scenario: Scenario) -> nx.Graph:
    channel, index = _lora_channel(scenario)
    g = nx.Graph()
    g.add_nodes_from(index)
    for a, ia in index.items():
        for b, ib in index.items():
            if a < b and channel.reachable(ia, ib) and channel.reachable(ib, ia):
                g.add_edge(a, b)
    return g


def _free_links(scenario: Scenario) -> Iterable[tuple[str, str]]:
    yield from scenario.ble_links()
    for spec in scenario.links:
        yield spec.a, spec.b


def _broadcasts_from(author: str, lora: nx.Graph, islands: list[set[str]],
                     reach: dict[str, set[str]]) -> int:
    """Broadcasts needed for one item of ``author``: its own island from the author,
    every other island it reaches over free links from that island's best node."""
    total = 0
    for island in islands:
        if author in island:
            total += len(greedy_cds(lora, author)) if len(island) > 1 else 1
        elif island & reach[author]:
            if len(island) > 1:
                total += min(len(greedy_cds(lora, v)) for v in sorted(island))
            else:
                total += 1
    return total


def lower_bound(scenario: Scenario, published: Iterable[tuple[str, int]]
                ) -> AirtimeBound | None:
    """The airtime lower bound of ``scenario`` with these publications (author, content
    size); None when it has no LoRa node."""
    lora = _lora_graph(scenario)
    if lora.number_of_nodes() == 0:
        return None
    everything = nx.Graph(lora)
    everything.add_nodes_from(n.name for n in scenario.nodes)
    everything.add_edges_from(_free_links(scenario))
    reach = {v: nx.node_connected_component(everything, v) for v in everything}
    islands = [set(c) for c in nx.connected_components(lora)]
    frame = scenario.radio.params.airtime(PACKET_LEN + CRC_LEN)
    per_author: dict[str, int] = {}
    items = broadcasts = 0
    for author, size in published:
        n_items = items_of(size)
        if author not in per_author:
            per_author[author] = _broadcasts_from(author, lora, islands, reach)
        items += n_items
        broadcasts += n_items * per_author[author]
    return AirtimeBound(broadcasts * frame, items, broadcasts, frame)


# --- receive headroom -------------------------------------------------------------------

@dataclass(slots=True, frozen=True)
class Headroom:
    """How much of the content each LoRa node could hear at most, as a multiple of what it
    must receive (items published by others over the run)."""

    ratios: dict[str, float]  # node -> airtime it could hear / airtime of others' items

    @property
    def tightest(self) -> tuple[str, float]:
        """The node with the least headroom, and its ratio."""
        node = min(self.ratios, key=lambda n: (self.ratios[n], n))
        return node, self.ratios[node]

    @property
    def short(self) -> list[str]:
        """The nodes that cannot receive everything, whatever the policy (ratio < 1)."""
        return sorted(n for n, r in self.ratios.items() if r < 1.0)


def decode_share(median_dbm: float, sensitivity_dbm: float, sigma_db: float) -> float:
    """The share of the channel's shadowing draws that lift a frame to the sensitivity."""
    if sigma_db == 0:
        return 1.0 if median_dbm >= sensitivity_dbm else 0.0
    levels = shadow_levels()  # ascending
    return 1.0 - bisect_left(levels, (sensitivity_dbm - median_dbm) / sigma_db) / len(levels)


def receive_headroom(scenario: Scenario, published: Iterable[tuple[str, int]]
                     ) -> Headroom | None:
    """Per LoRa node: the most airtime its neighbours could put on the air for it during
    the run (each sending its whole duty budget in every duty-cycle window the run
    touches, every frame decoded wherever the channel's shadowing lets it reach the
    sensitivity: no collisions, no half-duplex) over the airtime of the items others
    publish. Below 1 no policy can deliver every
    item to that node within the run; above it the answer depends on the policy. Nodes
    with a BLE or IP link are left out (those links cost no airtime). None without LoRa
    nodes or publications."""
    frame = scenario.radio.params.airtime(PACKET_LEN + CRC_LEN)
    content: dict[str, float] = {}  # author -> airtime of its items
    for author, size in published:
        content[author] = content.get(author, 0.0) + frame * items_of(size)
    total = sum(content.values())
    channel, index = _lora_channel(scenario)
    if not index or total == 0:
        return None
    wired = {name for link in _free_links(scenario) for name in link}
    sigma = scenario.radio.path_loss.sigma_db
    # the most one radio may send in the run: the duty cycle holds in every window, and
    # ceil(duration / window) windows cover the run
    window = scenario.radio.duty_window
    budget = scenario.radio.duty_cycle * window * math.ceil(scenario.duration / window)
    ratios: dict[str, float] = {}
    for v, iv in index.items():
        need = total - content.get(v, 0.0)
        if v in wired or need <= 0:
            continue
        rv = channel.radios[iv]
        hear = sum(budget * decode_share(channel.median_rssi(iu, iv), rv.sensitivity, sigma)
                   for iu in index.values() if iu != iv and channel.radios[iu].key == rv.key)
        ratios[v] = hear / need
    return Headroom(ratios) if ratios else None
