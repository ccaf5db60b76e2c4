"""The receive headroom: the most a node could hear, against what it must receive."""

from __future__ import annotations

import pytest

from firmware_sim.bound import receive_headroom
from firmware_sim.runner import capture_meta, publications, run_scenario
from firmware_sim.scenario import Scenario, load_scenario, parse_scenario
from firmware_sim.summary import format_summary

# two nodes close together (every frame clears the sensitivity), one author: its 10
# entries with one chunk each are 20 frames of 0.2 s (SF7, 125 kHz), 4.1 s on the air;
# the duty cycle holds in every hour, and the run touches two
SCENARIO = """
name = "headroom-test"
seed = 1
duration = "2h"
policy = "default"

[radio]
profile = "EU868.a"
duty_cycle = {duty}

[[nodes]]
layout = "line"
prefix = "n"
count = 2
spacing = 30

[[feeds]]
authors = ["n0"]
entries = 10
interval = "5s"
start = "1s"
size = 100
"""


def _scenario(duty: float) -> Scenario:
    return parse_scenario(SCENARIO.format(duty=duty))


def _published(s: Scenario) -> list[tuple[str, int]]:
    return [(p.author, p.size) for p in publications(s, s.seed)]


def test_a_node_whose_neighbours_cannot_send_it_everything_is_named() -> None:
    s = _scenario(0.0005)  # 1.8 s an hour
    h = receive_headroom(s, _published(s))
    assert h is not None
    frame = s.radio.params.airtime(124)
    # the one sender's whole budget over the airtime of 10 entries and 10 chunks
    assert h.ratios == {"n1": pytest.approx(0.0005 * 2 * 3600 / (20 * frame))}
    assert h.tightest[0] == "n1" and h.short == ["n1"]
    # and indeed no policy gets them all there
    summary = run_scenario(s, None)
    assert summary.convergence.share < 1.0
    assert "1 cannot receive every item, whatever the policy: n1" in format_summary(summary)


def test_with_budget_enough_every_node_could_and_the_summary_says_so() -> None:
    s = _scenario(0.1)
    h = receive_headroom(s, _published(s))
    assert h is not None and h.short == [] and h.tightest[1] > 1
    meta = capture_meta(s, s.seed, "default")
    assert meta["receive_headroom_node"] == "n1" and meta["receive_short"] == []
    text = format_summary(run_scenario(s, None))
    assert "receive headroom: n1, the tightest node, could hear at most" in text
    assert "every node could" in text


def test_weak_links_count_by_the_share_of_frames_they_carry() -> None:
    city = load_scenario("city-100")
    h = receive_headroom(city, _published(city))
    assert h is not None and h.short == []
    node, ratio = h.tightest
    # c76 hears c67 well, c41 and c82 only now and then (docs/simulator.md)
    assert node == "c76" and 1.5 < ratio < 2.5
