"""The oracle: a scheduler that knows what every node holds, on the simulator's channel."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace

import pytest

from firmware_sim.cli import add_sim_commands
from firmware_sim.oracle import OracleError, check_scenario, format_oracle, run_oracle
from firmware_sim.scenario import Scenario, load_scenario, parse_scenario
from gateway.errors import UserError

SCENARIO = """
name = "oracle-test"
seed = 1
duration = "{duration}"

[radio]
profile = "EU868.a"

[[nodes]]
layout = "line"
prefix = "n"
count = {count}
spacing = {spacing}

[[feeds]]
authors = ["n0"]
entries = 2
interval = "1m"
start = "5s"
size = 100
"""


def _scenario(count: int, spacing: float, duration: str = "1h") -> Scenario:
    return parse_scenario(SCENARIO.format(count=count, spacing=spacing, duration=duration))


def main(*argv: str) -> int:
    p = argparse.ArgumentParser(prog="tinyssb")
    add_sim_commands(p.add_subparsers(dest="command", required=True))
    args = p.parse_args(argv)
    return int(args.func(args))


def test_what_the_only_neighbour_holds_is_never_sent_again() -> None:
    # two nodes 30 m apart: every frame arrives, so the author sends the key once and
    # each entry and chunk once, and the other node, which holds nothing the author
    # lacks, sends nothing
    r = run_oracle(_scenario(2, 30))
    c = r.convergence
    assert c.converged and c.share == 1.0 and r.late_entries == 0
    assert r.frames == {"novelty": 1, "entry": 2, "chunk": 2}
    assert not r.drops


def test_items_cross_a_line_hop_by_hop_and_the_mesh_then_falls_quiet() -> None:
    short = run_oracle(_scenario(4, 180, "30m"))
    long = run_oracle(_scenario(4, 180, "2h"))
    assert short.convergence.converged and short.convergence.on_time_share == 1.0
    assert long.frames == short.frames  # nothing is sent once every node holds everything
    # the far end is out of the author's range: the five items went out more than once
    assert sum(short.frames.values()) > 5


def test_a_node_nobody_reaches_never_completes_and_costs_no_airtime() -> None:
    s = _scenario(2, 30)
    far = replace(s.nodes[1], x=20_000.0)  # (a scenario file with it is refused)
    r = run_oracle(s.with_(nodes=(s.nodes[0], far)))
    c = r.convergence
    assert not c.converged and c.share == 0.5 and r.late_entries == 2
    assert r.frames == {}
    assert "converged: no; 1 of 2 nodes hold everything" in format_oracle(r)


def test_meshes_with_links_or_contracts_are_refused() -> None:
    with pytest.raises(OracleError, match="BLE or IP links"):
        check_scenario(load_scenario("islands-ip"))
    with pytest.raises(OracleError, match="tinyISP"):
        check_scenario(load_scenario("isp-islands"))
    with pytest.raises(UserError, match="BLE or IP links"):
        main("sim", "oracle", "islands-ip")


def test_the_command_prints_the_lines_sim_run_prints(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main("sim", "oracle", "line-5", "--duration", "30m") == 0
    out = capsys.readouterr().out
    assert out.startswith("oracle on scenario line-5: 5 nodes, seed 1")
    assert "converged: yes, at" in out and "entry spread (publication -> last node)" in out
    assert "late entries (some node complete after 900 s, or never): 0 of 6" in out
    assert main("sim", "oracle", "line-5", "--duration", "30m", "--seed", "2", "--gap", "60",
                "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert data["seed"] == 2 and data["gap_s"] == 60 and data["entries"] == 6
    assert data["tx"]["entry"]["frames"] >= 6 and 0 < data["share"] <= 1


def test_with_beacons_it_pushes_blind_and_beacons_on_the_air() -> None:
    # two nodes 30 m apart, a beacon every 10 min: each radio beacons 6 times in the
    # hour; the author pushes each item, and the other node, which knows nothing of what
    # the author holds beyond its beacons, pushes each item it gained once too
    r = run_oracle(_scenario(2, 30), beacon=600)
    assert r.convergence.converged and r.late_entries == 0 and r.beacon == 600
    assert r.frames == {"beacon": 12, "novelty": 2, "entry": 4, "chunk": 4}
    assert "beacons what it holds every 600 s" in format_oracle(r)


def test_with_beacons_a_line_still_converges() -> None:
    r = run_oracle(_scenario(4, 180, "2h"), beacon=300)
    assert r.convergence.converged and r.convergence.share == 1.0
    assert r.frames["beacon"] == 4 * 2 * 3600 // 300
    with pytest.raises(OracleError, match="beacon period must be positive"):
        run_oracle(_scenario(2, 30), beacon=0)
