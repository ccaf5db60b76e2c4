"""The isp-islands scenario: three clients chat through an ISP in a simulated LoRa mesh."""

from __future__ import annotations

import pytest

from firmware_sim.isp_run import attach_isp
from firmware_sim.runner import build, run_scenario
from firmware_sim.scenario import load_scenario
from gateway.isp import Role


@pytest.fixture(scope="module")
def islands() -> tuple[object, object]:
    scenario = load_scenario("isp-islands")
    sim = build(scenario)
    assert scenario.isp is not None
    report = attach_isp(sim, scenario.isp, scenario.seed)
    sim.run(scenario.duration)
    return sim, report


def test_every_chat_message_arrives_once_and_in_order(islands: tuple) -> None:
    _, report = islands
    assert len(report.sent) == 190
    assert set(report.delivered) == set(report.sent)
    assert report.duplicates == 0 and report.out_of_order == 0
    assert report.refused == []
    # the islands hear each other only through the ISP: no frame of alice's reached carol
    assert all(t >= report.sent[k] for k, t in report.delivered.items())


def test_data_feeds_hopped_and_the_farewell_removed_bobs_contract(islands: tuple) -> None:
    sim, report = islands
    isp = sim.members["isp"].app.engine
    assert isp.role is Role.ISP and len(isp.contracts()) == 2  # alice, carol; bob left
    roots = {n: sim.feed_key(n, "root").fid for n in ("isp", "alice", "bob", "carol")}
    (to_carol,) = [c for c in isp.contracts() if c.peer == roots["carol"]]
    # 130 messages reached carol through one data feed at a time of at most 48 messages:
    # the ISP hopped at least twice, and only the unfinished feeds are left
    assert sum(1 for k in report.delivered if k[1] == "carol") == 130
    isp_store = sim.nodes["isp"].store
    assert isp_store.replica(to_carol.data_out[-1]).max_seq <= 50
    assert len(to_carol.data_out) <= 3
    carol_data = [f for f in sim.nodes["carol"].store.feeds() if f in to_carol.data_out]
    assert carol_data and len(carol_data) <= 3
    assert sim.members["bob"].app.engine.contracts() == []
    assert set(sim.nodes["bob"].store.feeds()) <= set(roots.values())  # no contract feed


def test_the_direct_baseline_runs_from_the_same_scenario() -> None:
    scenario = load_scenario("isp-islands").with_(duration=3 * 3600.0)
    summary = run_scenario(scenario, None, isp_direct=True)
    assert summary.meta["isp"] == "direct"
    (note,) = summary.notes
    assert "direct c2c feeds" in note and "delivered" in note


def test_a_subscription_asked_before_the_peer_onboarded_is_asked_again() -> None:
    # with the clients' empty WANT after a minute (the default preset waits 600 s) they
    # learn the GOSET's keys early and onboard sooner: alice asks for carol before
    # carol's contract stands, and the ISP answers not_found. The app asks again 5
    # minutes later, and every message arrives (asked once, all 90 + 60 of alice's and
    # carol's were lost)
    scenario = load_scenario("isp-islands")
    sim = build(scenario)
    for name in ("alice", "bob", "carol"):
        sim.nodes[name]._hello_first = 60.0
    assert scenario.isp is not None
    report = attach_isp(sim, scenario.isp, scenario.seed)
    sim.run(scenario.duration)
    assert sim.members["alice"].app.retries == {"carol": 1}
    assert len(report.sent) == 190
    assert set(report.delivered) == set(report.sent)
