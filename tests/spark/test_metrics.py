"""The metrics of the hand-made runs against the values worked out in ``captures.py``."""

from __future__ import annotations

from typing import Any

import pytest

from . import captures
from .conftest import Campaign

F_HEX = captures.F.hex()


def by(rows: list[dict[str, Any]], **match: object) -> list[dict[str, Any]]:
    return [r for r in rows if all(r[k] == v for k, v in match.items())]


def one(rows: list[dict[str, Any]], **match: object) -> dict[str, Any]:
    found = by(rows, **match)
    assert len(found) == 1, (match, found)
    return found[0]


def test_the_analysis_ran(campaign: Campaign) -> None:
    assert campaign.rc == 0, campaign.stderr


def test_converging_run_convergence_latency_and_share(campaign: Campaign) -> None:
    r = campaign.run("hand-ref")
    assert (r["nodes"], r["entries"], r["held_pairs"], r["delivered"]) == (3, 2, 6, 4)
    assert r["converged"] and r["share"] == 1.0 and r["nodes_complete"] == 3
    assert r["convergence_t"] == pytest.approx(11.2)
    assert r["convergence_after"] == pytest.approx(11.2)  # simulator time starts at 0
    assert r["last_publication_t"] == 10.0
    assert r["latency_median"] == pytest.approx(2.7)
    assert r["latency_p95"] == pytest.approx(5.05)
    assert r["latency_max"] == pytest.approx(5.2)
    assert r["spread_max"] == pytest.approx(5.2) and r["spread_median"] == pytest.approx(3.2)
    assert r["stalled_pairs"] == 0


def test_airtime_frames_and_efficiency(campaign: Campaign) -> None:
    r = campaign.run("hand-ref")
    assert r["tx_frames"] == 7 and r["tx_bytes"] == 745
    assert r["tx_air"] == pytest.approx(1.25)
    assert r["air_per_delivery"] == pytest.approx(0.3125)
    kinds = {row["kind"]: row for row in by(campaign.table("node_kind"), run="hand-ref")}
    air: dict[str, float] = {}
    for row in by(campaign.table("node_kind"), run="hand-ref"):
        air[row["kind"]] = air.get(row["kind"], 0.0) + row["tx_air"]
    assert air == pytest.approx({"claim": 0.2, "want": 0.05, "entry": 0.6, "chunk": 0.4})
    assert set(kinds) == {"claim", "want", "entry", "chunk"}


def test_duplicates_redundancy_and_losses(campaign: Campaign) -> None:
    r = campaign.run("hand-ref")
    assert (r["duplicates"], r["redundant"], r["payload_received"]) == (2, 2, 8)
    assert r["redundancy"] == pytest.approx(0.25)
    assert (r["collisions"], r["lost"], r["drops"], r["rx_frames"]) == (2, 3, 5, 10)
    nk = campaign.table("node_kind")
    a_chunk = one(nk, run="hand-ref", node="A", kind="chunk")
    assert (a_chunk["tx_frames"], a_chunk["duplicates"], a_chunk["redundant"]) == (1, 1, 1)
    assert a_chunk["tx_air"] == pytest.approx(0.2)
    b_entry = one(nk, run="hand-ref", node="B", kind="entry")
    assert (b_entry["rx_frames"], b_entry["duplicates"], b_entry["rx_bytes"]) == (3, 1, 372)
    assert b_entry["rx_air"] == pytest.approx(0.6)  # the airtime its senders spent on them
    a_entry = one(nk, run="hand-ref", node="A", kind="entry")
    assert (a_entry["collisions"], a_entry["lost"], a_entry["tx_frames"]) == (1, 1, 2)
    drops = {(d["node"], d["reason"], d["kind"]): d["frames"]
             for d in by(campaign.table("drops"), run="hand-ref")}
    assert drops == {("C", "collision", "claim"): 1, ("C", "half-duplex", "chunk"): 1,
                     ("A", "no_match", "chunk"): 1, ("B", "no_match", "entry"): 1,
                     ("A", "collision", "entry"): 1}


def test_entries_first_appearance_and_completion(campaign: Campaign) -> None:
    entries = {e["seq"]: e for e in by(campaign.table("entries"), run="hand-ref")}
    e1, e2 = entries[1], entries[2]
    assert e1["feed"] == F_HEX and e1["author"] == "A" and e1["published"] and e1["tracked"]
    assert (e1["first_t"], e1["items"], e1["held_by"], e1["nodes"]) == (0.0, 2, 3, 3)
    assert e1["complete_all_t"] == pytest.approx(5.2) and e1["spread"] == pytest.approx(5.2)
    assert (e1["duplicates"], e1["redundant"]) == (2, 2)
    assert (e2["first_t"], e2["items"]) == (10.0, 1)
    assert e2["complete_all_t"] == pytest.approx(11.2) and e2["spread"] == pytest.approx(1.2)
    assert e2["duplicates"] == 0


def test_deliveries_per_node(campaign: Campaign) -> None:
    rows = by(campaign.table("deliveries"), run="hand-ref")
    got = {(d["node"], d["seq"]): (d["entry_t"], d["complete_t"], d["latency"], d["own"])
           for d in rows}
    expected = {("A", 1): (0.0, 0.0, 0.0, True), ("B", 1): (3.2, 4.2, 4.2, False),
                ("C", 1): (3.2, 5.2, 5.2, False), ("A", 2): (10.0, 10.0, 0.0, True),
                ("B", 2): (11.2, 11.2, 1.2, False), ("C", 2): (11.2, 11.2, 1.2, False)}
    assert got.keys() == expected.keys()
    for key, values in expected.items():
        assert got[key] == pytest.approx(values), key


def test_convergence_curve_steps(campaign: Campaign) -> None:
    curve = sorted(by(campaign.table("curve"), run="hand-ref"), key=lambda c: c["t"])
    assert [c["t"] for c in curve] == pytest.approx([0.0, 4.2, 5.2, 10.0, 11.2])
    assert [c["held"] for c in curve] == [1, 2, 3, 4, 6]
    assert [c["share"] for c in curve] == pytest.approx([1 / 6, 2 / 6, 3 / 6, 4 / 6, 1.0])


def test_stalled_run_names_the_missing_chunk(campaign: Campaign) -> None:
    r = campaign.run("hand-def")
    assert not r["converged"] and r["convergence_t"] is None
    assert r["share"] == pytest.approx(2 / 3) and r["nodes_complete"] == 2
    assert (r["delivered"], r["stalled_pairs"]) == (1, 1)
    assert r["air_per_delivery"] == pytest.approx(0.6)
    stall = one(campaign.table("stalls"), run="hand-def")
    assert (stall["node"], stall["seq"], stall["feed"]) == ("C", 1, F_HEX)
    assert stall["state"] == "side chain incomplete" and not stall["entry_missing"]
    assert stall["missing_chunks"] == [0]
    assert (stall["items_held"], stall["items"]) == (2, 3)
    assert stall["last_progress_t"] == pytest.approx(4.2)
    node_c = one(campaign.table("nodes"), run="hand-def", node="C")
    assert not node_c["complete"] and node_c["complete_t"] is None
    node_b = one(campaign.table("nodes"), run="hand-def", node="B")
    assert node_b["complete"] and node_b["complete_t"] == pytest.approx(4.2)


def test_gateway_directory_is_one_run_of_the_nodes_seen(campaign: Campaign) -> None:
    r = campaign.run("gw-site")
    assert (r["source"], r["scenario"], r["policy"], r["files"]) == ("gateway", "field",
                                                                     "unknown", 2)
    assert (r["nodes"], r["entries"], r["delivered"]) == (2, 1, 1)
    assert r["converged"] and r["convergence_t"] == pytest.approx(1000.1)
    assert r["origin_t"] == 1000.0 and r["convergence_after"] == pytest.approx(0.1)
    assert r["tx_air"] == 0.0 and r["air_per_delivery"] == 0.0
    assert (r["duplicates"], r["redundant"]) == (1, 1)
    assert r["latency_median"] == pytest.approx(0.1)


def test_gateway_run_without_publications_tracks_what_was_held(campaign: Campaign) -> None:
    r = campaign.run("gw-late")
    assert (r["nodes"], r["entries"], r["held_pairs"], r["delivered"]) == (2, 1, 2, 1)
    assert r["converged"] and r["convergence_after"] == pytest.approx(0.2)
    assert r["last_publication_t"] is None
    (entry,) = by(campaign.table("entries"), run="gw-late")
    assert (entry["published"], entry["tracked"], entry["author"]) == (False, True, "carol")
    assert (entry["first_t"], entry["items"]) == (2000.0, 1)
    carol = one(campaign.table("deliveries"), run="gw-late", node="carol")
    assert carol["own"] and carol["complete_t"] == 2000.0  # held from her first send
    dave = one(campaign.table("deliveries"), run="gw-late", node="dave")
    assert not dave["own"] and dave["latency"] == pytest.approx(0.2)


def test_groups_put_the_policies_of_a_scenario_side_by_side(campaign: Campaign) -> None:
    groups = {(g["scenario"], g["policy"]): g for g in campaign.summary["groups"]}
    assert groups["hand", "reference"]["converged_runs"] == 1
    assert groups["hand", "default"]["converged_runs"] == 0
    assert groups["hand", "reference"]["convergence_median"] == pytest.approx(11.2)
    assert groups["hand", "default"]["convergence_median"] is None
    assert groups["line-5", "default"]["runs"] == 2
    comp = next(c for c in campaign.summary["comparisons"] if c["scenario"] == "hand")
    assert comp["policies"] == ["reference", "default"]  # the baseline first
    rows = {row["key"]: row for row in comp["rows"]}
    assert rows["converged_runs"]["shown"] == {"reference": "1/1", "default": "0/1"}
    assert rows["air_per_delivery"]["values"] == pytest.approx({"reference": 0.3125,
                                                                "default": 0.6})
    assert rows["stalled_pairs"]["values"] == {"reference": 0, "default": 1}
