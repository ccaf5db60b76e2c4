"""Shipped scenarios run to convergence, judged from their capture files only; two runs
of the same scenario and seed write the same bytes."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from firmware_sim.runner import run_scenario
from firmware_sim.scenario import load_scenario
from firmware_sim.summary import convergence, summarize
from gateway.capture import CaptureReader, Direction

ROOT = Path(__file__).resolve().parents[2]


def run(name: str, out: Path, **kw: object) -> Path:
    run_scenario(load_scenario(name), out, **kw)  # type: ignore[arg-type]
    return out


@pytest.mark.parametrize("name", ["line-5", "grid-25"])
def test_scenario_converges_according_to_its_capture(name: str, tmp_path: Path) -> None:
    path = run(name, tmp_path / f"{name}.cbor")
    c = convergence(path)
    scenario = load_scenario(name)
    expected = sum(f.entries * len(f.authors) for f in scenario.feeds)
    assert c.converged, c
    assert c.entries == expected and c.nodes == len(scenario.nodes)
    assert c.held == c.entries * c.nodes and c.nodes_complete == c.nodes
    assert c.time is not None and c.last_publication is not None
    assert c.last_publication <= c.time < scenario.duration
    assert len(c.latencies) == c.entries


def test_every_node_stores_every_item_once_with_metadata(tmp_path: Path) -> None:
    path = run("line-5", tmp_path / "l5.cbor")
    reader = CaptureReader(path)
    records = list(reader)
    meta = reader.meta
    assert meta["source"] == "simulator" and meta["scenario"] == "line-5"
    assert meta["nodes"] == ["n0", "n1", "n2", "n3", "n4"] and meta["profile"] == "EU868.a"
    stores = Counter((r.node, r.feed, r.seq, r.cnr) for r in records if r.dir is Direction.STORE)
    assert set(stores.values()) == {1}  # nothing stored twice
    own = [r for r in records if r.dir is Direction.STORE and r.face is None]
    items = {(r.feed, r.seq, r.cnr) for r in own}
    assert len(items) == 6 * 3  # 6 entries of 200 bytes: the entry and two chunks each
    for node in meta["nodes"]:
        assert {(f, s, c) for (n, f, s, c) in stores if n == node} == items
    times = [r.t for r in records]
    assert times == sorted(times)  # one clock, events in order
    for r in records:
        if r.dir is Direction.TX:
            assert r.face == "lora0" and r.air is not None and r.air > 0 and r.kind
        elif r.dir in (Direction.RX, Direction.DROP):
            assert r.frame is not None and r.rssi is not None and r.snr is not None
            assert r.dir is Direction.RX or r.reason
    reasons = Counter(r.reason for r in records if r.dir is Direction.DROP)
    assert reasons["collision"] and reasons["half-duplex"] and reasons["below-sensitivity"]


def test_mixed_lora_ble_and_ip_scenario_converges(tmp_path: Path) -> None:
    path = run("islands-ip", tmp_path / "islands.cbor")
    s = summarize(path)
    assert s.convergence.converged
    faces = Counter(r.face.split(":")[0] for r in CaptureReader(path)
                    if r.dir is Direction.RX and r.face)
    assert faces["lora0"] and faces["ble"] and faces["ip"]


def test_same_scenario_and_seed_give_identical_bytes(tmp_path: Path) -> None:
    first = run("line-5", tmp_path / "a.cbor").read_bytes()
    second = run("line-5", tmp_path / "b.cbor").read_bytes()
    assert first == second
    other_seed = run("line-5", tmp_path / "c.cbor", seed=2).read_bytes()
    assert other_seed != first
    # and in another interpreter with another string-hash seed
    code = ("import sys; from firmware_sim.runner import run_scenario; "
            "from firmware_sim.scenario import load_scenario; "
            "run_scenario(load_scenario('line-5'), sys.argv[1])")
    env = dict(os.environ, PYTHONHASHSEED="12345")
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "d.cbor")], check=True,
                   cwd=ROOT, env=env, timeout=120)
    assert (tmp_path / "d.cbor").read_bytes() == first


def test_a_run_leaves_the_garbage_collector_as_it_found_it(tmp_path: Path) -> None:
    """run_scenario collects garbage rarely while the simulation runs (the built
    simulation frozen out of its sight); afterwards the process is as before, also when
    the run fails."""
    import gc

    from firmware_sim import runner

    before = gc.get_threshold()
    seen: list[tuple[tuple[int, int, int], int]] = []
    original = runner.Simulation.run

    def spy(self: runner.Simulation, *args: object, **kw: object) -> object:
        seen.append((gc.get_threshold(), gc.get_freeze_count()))
        raise RuntimeError("stop")

    runner.Simulation.run = spy  # type: ignore[method-assign,assignment]
    try:
        with pytest.raises(RuntimeError, match="stop"):
            run_scenario(load_scenario("line-5"), None)
    finally:
        runner.Simulation.run = original  # type: ignore[method-assign]
    (threshold, frozen), = seen
    assert threshold[0] == runner.SIM_GC_THRESHOLD and frozen > 0
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
