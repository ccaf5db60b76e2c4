"""The event loop driving real Nodes: programmatic meshes, BLE and IP links, external
radios, and the summary computed from capture records."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from firmware_sim import phy
from firmware_sim.engine import LORA_FACE, Simulation
from firmware_sim.links import LinkKind, PointLink
from firmware_sim.summary import ON_TIME_S, SummaryBuilder, format_summary, summary_json
from gateway.capture import Direction, Record
from gateway.replication import Event, NewEntry
from gateway.wire.crc import add_crc
from gateway.wire.lora import profile

EU = profile("EU868.a", tx_power_dbm=20)  # the reference firmware's power
FLAT = replace(phy.PATH_LOSS_PRESETS["log-distance"], sigma_db=0.0)


class Sink:
    def __init__(self) -> None:
        self.records: list[Record] = []

    def write(self, record: Record) -> None:
        self.records.append(record)

    def of(self, direction: Direction) -> list[Record]:
        return [r for r in self.records if r.dir is direction]


def complete(sim: Simulation, fid: bytes, n: int) -> bool:
    return all(fid in node.store and node.store.replica(fid).max_seq == n
               and node.store.replica(fid).missing_chunks() == 0
               for node in sim.nodes.values())


def test_two_lora_nodes_exchange_a_feed_in_virtual_time() -> None:
    sink = Sink()
    sim = Simulation(seed=3, capture=sink, path_loss=FLAT)
    sim.add_node("a", 0, 0, lora=EU)
    sim.add_node("b", 100, 0, lora=EU)
    key = sim.feed_key("a")
    sim.publish_at(5.0, "a", key, b"x" * 300)  # the entry and 3 chunks
    sim.run(600.0)
    assert complete(sim, key.fid, 1) and sim.now == 600.0
    stored = [(r.node, r.seq, r.cnr) for r in sink.of(Direction.STORE)]
    assert stored[:4] == [("a", 1, None), ("a", 1, 0), ("a", 1, 1), ("a", 1, 2)]
    assert {x for x in stored if x[0] == "b"} == {("b", 1, None), ("b", 1, 0), ("b", 1, 1),
                                                  ("b", 1, 2)}
    rx = sink.of(Direction.RX)
    # 100 m, no shadowing: 20 dBm - (127.41 + 20.8 log10(100 / 40)) = 20 - 135.69 dBm
    assert rx and all(r.face == LORA_FACE and r.rssi == pytest.approx(-115.7, abs=0.05)
                      for r in rx)
    assert sim.stats.published == 1 and sim.stats.transmissions == len(sink.of(Direction.TX))


def test_ble_and_ip_links_carry_frames_with_latency() -> None:
    sink = Sink()
    sim = Simulation(seed=1, capture=sink)
    sim.add_node("phone")
    sim.add_node("gw")
    sim.add_node("cloud")
    sim.link("phone", "gw", LinkKind.BLE, latency=0.03, rate_bps=125_000)
    sim.link("gw", "cloud", LinkKind.IP, latency=0.2)
    key, other = sim.feed_key("phone"), sim.feed_key("cloud")
    sim.publish_at(1.0, "phone", key, b"from the phone")
    sim.publish_at(2.0, "cloud", other, b"from the cloud")
    sim.run(120.0)
    assert complete(sim, key.fid, 1) and complete(sim, other.fid, 1)
    faces = {(r.node, r.face) for r in sink.of(Direction.RX)}
    assert {("gw", "ble:phone"), ("phone", "ble:gw"), ("cloud", "ip:gw"),
            ("gw", "ip:cloud")} <= faces
    sent: dict[tuple[str, bytes | None], list[float]] = {}
    for r in sink.of(Direction.TX):
        sent.setdefault((r.node, r.frame), []).append(r.t)
    for r in sink.of(Direction.RX):
        assert r.face is not None
        kind, peer = r.face.split(":", 1)
        times = sent[(peer, r.frame)]
        if kind == "ip":  # latency only
            assert any(r.t == pytest.approx(t + 0.2) for t in times)
        else:  # latency plus the time to clock the frame out at 125 kbit/s
            assert any(r.t >= t + 0.03 + len(r.frame or b"") * 8 / 125_000 - 1e-9
                       for t in times)


def test_point_link_queues_frames_behind_each_other() -> None:
    link = PointLink(LinkKind.BLE, "a", "b", latency=0.03, rate_bps=8000.0)
    assert link.arrival("a", 100, 0.0) == pytest.approx(0.1 + 0.03)  # 800 bits at 8 kbit/s
    assert link.arrival("a", 100, 0.0) == pytest.approx(0.2 + 0.03)  # waits for the first
    assert link.arrival("b", 100, 0.0) == pytest.approx(0.1 + 0.03)  # other direction free
    assert (link.face("a"), link.face("b")) == ("ble:b", "ble:a")
    with pytest.raises(ValueError):
        PointLink(LinkKind.IP, "a", "a", latency=0.0)


def test_external_radio_hears_the_mesh_and_is_serialised_on_air() -> None:
    heard: list[tuple[bytes, float, float]] = []
    sink = Sink()
    sim = Simulation(seed=2, capture=sink, path_loss=FLAT)
    sim.add_node("a", 0, 0, lora=EU)
    sim.add_external("dongle", 40, 0, EU, lambda f, rssi, snr: heard.append((f, rssi, snr)))
    sim.publish_at(0.5, "a", sim.feed_key("a"), b"hello")
    sim.run(30.0)
    assert heard and all(rssi == pytest.approx(-107.4) for _, rssi, _ in heard)
    frame = add_crc(b"\x01" * 50)
    sim.external_transmit("dongle", frame)
    sim.external_transmit("dongle", frame)  # the radio is busy: goes out after the first
    air = phy.airtime(EU, len(frame))
    sim.run(sim.now + 5.0)
    starts = [r.t for r in sink.of(Direction.TX) if r.node == "dongle"]
    assert len(starts) == 2 and starts[1] - starts[0] == pytest.approx(air)
    with pytest.raises(ValueError, match="not an external radio"):
        sim.external_transmit("a", frame)


def test_bad_mesh_building_is_refused() -> None:
    sim = Simulation()
    sim.add_node("a", lora=EU)
    with pytest.raises(ValueError, match="taken"):
        sim.add_node("a")
    with pytest.raises(ValueError, match="no such node"):
        sim.link("a", "zz")
    with pytest.raises(ValueError, match="not simulated"):
        sim.add_node("b", lora=replace(EU, bandwidth_hz=62_500))
    with pytest.raises(ValueError, match="unknown author"):
        sim.publish_at(1.0, "zz", sim.feed_key("zz"), b"x")


def test_summary_from_hand_made_records() -> None:
    fid = bytes(32)
    b = SummaryBuilder()
    b.write(Record(0.0, "simulator", Direction.META, meta={"nodes": ["a", "b"],
                                                          "scenario": "hand"}))
    b.write(Record(1.0, "a", Direction.STORE, kind="entry", feed=fid, seq=1))
    b.write(Record(1.0, "a", Direction.STORE, kind="chunk", feed=fid, seq=1, cnr=0))
    b.write(Record(2.0, "a", Direction.TX, "lora0", b"e" * 124, "entry", air=0.205))
    b.write(Record(2.2, "b", Direction.RX, "lora0", b"e" * 124, "entry", rssi=-100.0))
    b.write(Record(2.2, "b", Direction.STORE, "lora0", kind="entry", feed=fid, seq=1))
    assert not b.convergence().converged  # b lacks the chunk
    b.write(Record(5.0, "b", Direction.DROP, "lora0", b"c" * 124, reason="collision"))
    b.write(Record(9.5, "b", Direction.STORE, "lora0", kind="chunk", feed=fid, seq=1, cnr=0))
    s = b.result()
    c = s.convergence
    assert c.converged and c.time == 9.5 and c.latencies == [8.5] and c.share == 1.0
    assert s.tx_frames["entry"] == 1 and math.isclose(s.tx_airtime["entry"], 0.205)
    assert s.rx_frames == 1 and s.collisions == 1
    table = format_summary(s)
    assert "converged: yes, at 9.5 s" in table and "collisions: 1" in table


def test_summary_counts_pairs_complete_within_900_s() -> None:
    """A node that completes an entry later than 900 s after its publication holds the pair,
    but not on time; the summary line and the JSON say how many were."""
    one, two = bytes(32), bytes([1]) * 32
    b = SummaryBuilder()
    b.write(Record(0.0, "simulator", Direction.META, meta={"nodes": ["a", "b"]}))
    for fid, t in ((one, 10.0), (two, 20.0)):
        b.write(Record(t, "a", Direction.STORE, kind="entry", feed=fid, seq=1))
    b.write(Record(10.0 + ON_TIME_S, "b", Direction.STORE, "lora0", kind="entry", feed=one, seq=1))
    b.write(Record(21.0 + ON_TIME_S, "b", Direction.STORE, "lora0", kind="entry", feed=two, seq=1))
    s = b.result()
    c = s.convergence
    assert c.converged and c.held == 4 and c.on_time == 3 and c.on_time_share == 0.75
    assert "complete within 900 s of publication: 75.0% of (node, entry) pairs" in (
        format_summary(s))
    assert summary_json(s)["on_time_pairs"] == 3


def test_summary_names_the_worst_served_nodes() -> None:
    """The nodes late on some entry, fewest on time first, with what they held at the end:
    where a mesh needs another relay. A node that is never late is not named."""
    one, two = bytes(32), bytes([1]) * 32
    b = SummaryBuilder()
    b.write(Record(0.0, "simulator", Direction.META, meta={"nodes": ["a", "b", "c", "d"]}))
    for fid, t in ((one, 10.0), (two, 20.0)):
        b.write(Record(t, "a", Direction.STORE, kind="entry", feed=fid, seq=1))
        b.write(Record(t + 5.0, "d", Direction.STORE, "lora0", kind="entry", feed=fid, seq=1))
    b.write(Record(15.0, "b", Direction.STORE, "lora0", kind="entry", feed=one, seq=1))
    b.write(Record(20.0 + ON_TIME_S + 1, "b", Direction.STORE, "lora0", kind="entry", feed=two,
                   seq=1))
    b.write(Record(5000.0, "c", Direction.STORE, "lora0", kind="entry", feed=one, seq=1))
    s = b.result()
    c = s.convergence
    assert c.worst_served() == [("c", 0, 1), ("b", 1, 2)]
    assert ("worst served (share of the 2 entries within 900 s; held at the end): "
            "c 0.0% (1), b 50.0% (2)") in format_summary(s)
    per_node = summary_json(s)["per_node"]
    assert per_node["a"] == {"held": 2, "on_time": 2} and per_node["c"] == {"held": 1,
                                                                          "on_time": 0}
    # everyone on time: no such line
    b.write(Record(30.0, "simulator", Direction.META, meta={"nodes": ["a", "d"]}))
    assert "worst served" not in format_summary(b.result())


def test_summary_names_the_nodes_at_their_duty_cycle_limit() -> None:
    """A node whose trailing hour held more than 80 % of its 1 % budget (28.8 s) for more
    than half the run is named, with the late pairs such nodes hold; its transmissions
    say so, whatever the policy."""
    fid = bytes(32)
    b = SummaryBuilder()
    b.write(Record(0.0, "simulator", Direction.META,
                   meta={"nodes": ["a", "b", "c"], "duty_cycle": 0.01, "duration": 4000.0}))
    b.write(Record(0.0, "a", Direction.STORE, kind="entry", feed=fid, seq=1))
    for i in range(20):  # 30.4 s of airtime at t = 18 s: over 28.8 s until 3,601 s
        b.write(Record(float(i), "b", Direction.TX, "lora0", frame=bytes(10), kind="entry",
                       air=1.6))
    b.write(Record(5.0, "c", Direction.TX, "lora0", frame=bytes(10), kind="want", air=0.2))
    b.write(Record(1000.0, "b", Direction.STORE, "lora0", kind="entry", feed=fid, seq=1))
    b.write(Record(10.0, "c", Direction.STORE, "lora0", kind="entry", feed=fid, seq=1))
    s = b.result()
    assert s.duty_bound["b"] == pytest.approx(3583.0)
    assert s.duty_bound["c"] == 0.0
    assert ("duty-bound (trailing hour above 80% of the budget): 1 of 3 nodes for more "
            "than half the run: b 90%; they hold 1 of the 1 late (node, entry) pairs"
            ) in format_summary(s)
    assert summary_json(s)["duty_bound_s"]["b"] == pytest.approx(3583.0)


def test_summary_counts_the_duty_cycle_over_the_window_the_capture_names() -> None:
    """A scenario may set another window than the hour (``duty_window``): 8 s of a 1 %
    budget over 1,000 s is the limit there."""
    b = SummaryBuilder()
    b.write(Record(0.0, "simulator", Direction.META,
                   meta={"nodes": ["a"], "duty_cycle": 0.01, "duty_window": 1000.0,
                         "duration": 1500.0}))
    b.write(Record(0.0, "a", Direction.TX, "lora0", frame=bytes(10), kind="entry", air=9.0))
    s = b.result()
    assert s.duty_bound["a"] == pytest.approx(1000.0)  # until the frame leaves the window
    assert "duty-bound (trailing 1000 s above 80% of the budget): 1 of 1 nodes" in (
        format_summary(s))


def test_summary_says_nothing_of_the_duty_cycle_where_no_node_reached_it() -> None:
    b = SummaryBuilder()
    b.write(Record(0.0, "simulator", Direction.META,
                   meta={"nodes": ["a"], "duty_cycle": 0.01, "duration": 600.0}))
    b.write(Record(1.0, "a", Direction.TX, "lora0", frame=bytes(10), kind="want", air=0.2))
    assert "duty-bound" not in format_summary(b.result())


class Echo:
    """A toy app: answers every entry of ``watch`` with one entry of its own feed."""

    def __init__(self, sim: Simulation, name: str, watch: bytes) -> None:
        self.node = sim.nodes[name]
        self.key = sim.feed_key(name, "echo")
        self.watch = watch
        self.seen: list[tuple[int, float]] = []
        self.timer: float | None = None
        self.fired: list[float] = []

    def on_events(self, events: list[Event], now: float) -> None:
        for e in events:
            if isinstance(e, NewEntry) and e.fid == self.watch and not e.own:
                self.seen.append((e.seq, now))
                self.node.publish(self.key, b"echo %d" % e.seq, now)

    def next_deadline(self) -> float | None:
        return self.timer

    def on_timer(self, now: float) -> None:
        self.fired.append(now)
        self.timer = None


def test_an_app_sees_events_at_once_and_its_entries_are_captured() -> None:
    sink = Sink()
    sim = Simulation(seed=4, capture=sink, path_loss=FLAT)
    sim.add_node("a", 0, 0, lora=EU)
    sim.add_node("b", 100, 0, lora=EU)
    key = sim.feed_key("a")
    echo = Echo(sim, "b", key.fid)
    echo.timer = 50.0
    sim.attach("b", echo)

    def say_hi(now: float) -> None:
        sim.nodes["a"].publish(key, b"hi", now)

    sim.call_at(5.0, "a", say_hi)
    sim.run(900.0)
    assert echo.fired == [50.0]
    assert len(echo.seen) == 1
    t_seen = echo.seen[0][1]
    stored_at_b = [r.t for r in sink.of(Direction.STORE)
                   if r.node == "b" and r.feed == key.fid]
    assert stored_at_b == [t_seen]  # handled at the instant it was stored
    own = [r for r in sink.of(Direction.STORE) if r.node == "b" and r.feed == echo.key.fid]
    assert [(r.seq, r.t) for r in own] == [(1, t_seen)]
    assert complete(sim, echo.key.fid, 1)
