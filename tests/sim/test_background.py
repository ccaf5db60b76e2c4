"""A capture written by a second process (firmware_sim.background) is the very file, and
the very summary, the run's own process writes; a failed or aborted run leaves none."""

from __future__ import annotations

from pathlib import Path

import pytest

from firmware_sim.background import BackgroundSinks
from firmware_sim.runner import CaptureSinks, build, capture_meta, run_scenario
from firmware_sim.scenario import load_scenario
from gateway.capture import CaptureReader, Direction, Record


@pytest.mark.parametrize(("name", "policy", "hours", "suffix"), [
    ("line-5", "default", 2.0, ".cbor"),
    ("grid-25", "reference", 0.5, ".cbor"),
    ("isp-islands", "default", 6.0, ".cbor"),  # an app publishes (store records) too
    ("line-5", "reference", 1.0, ".cbor.zst"),
])
def test_background_capture_is_the_same_file(name: str, policy: str, hours: float,
                                             suffix: str, tmp_path: Path) -> None:
    scenario = load_scenario(name).with_(duration=hours * 3600)
    here, there = tmp_path / f"here{suffix}", tmp_path / f"there{suffix}"
    a = run_scenario(scenario, here, policy=policy)
    b = run_scenario(scenario, there, policy=policy, background=True)
    assert here.read_bytes() == there.read_bytes()
    assert a == b
    assert not list(tmp_path.glob("*.part"))


def test_records_written_one_by_one_keep_their_place(tmp_path: Path) -> None:
    """``write(record)`` between batched fields (an external radio's sink) stays in order."""
    meta = {"scenario": "x", "nodes": ["a"]}
    here, there = CaptureSinks(meta, tmp_path / "a.cbor"), BackgroundSinks(tmp_path / "b.cbor",
                                                                           meta)
    for sink in (here.sink, there):
        sink.write_fields(1.0, "a", Direction.TX, "lora0", b"x" * 20, "want", None, None,
                          None, None, None, None, 0.05)
        sink.write(Record(2.0, "a", Direction.RX, "lora0", b"y" * 20, rssi=-90.0, snr=3.0))
        sink.write_drops(3.0, "lora0", b"z" * 20, [("a", "collision", -100.0, -2.0)])
    assert here.close() == there.close()
    assert (tmp_path / "a.cbor").read_bytes() == (tmp_path / "b.cbor").read_bytes()
    assert there.count == here.count == 4
    assert [r.t for r in CaptureReader(tmp_path / "b.cbor")] == [0.0, 1.0, 2.0, 3.0]


def test_abort_leaves_no_file(tmp_path: Path) -> None:
    scenario = load_scenario("line-5").with_(duration=600.0)
    out = tmp_path / "a.cbor"
    sinks = CaptureSinks(capture_meta(scenario, scenario.seed, "default"), out,
                         background=True)
    sim = build(scenario, capture=sinks.sink)
    sim.run(300.0)
    sinks.abort()
    assert list(tmp_path.iterdir()) == []


def test_a_file_that_cannot_be_written_fails_at_once(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        BackgroundSinks(tmp_path / "no" / "such" / "dir.cbor", {"scenario": "x"})
