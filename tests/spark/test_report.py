"""What ``tinyssb analyze`` leaves behind and prints: files, plots, page, summary."""

from __future__ import annotations

import json

from .conftest import Campaign

PNG = b"\x89PNG\r\n\x1a\n"


def test_report_files_are_all_there_and_nothing_half_written(campaign: Campaign) -> None:
    out = campaign.out
    assert (out / "index.html").is_file() and (out / "summary.json").is_file()
    for name in ("runs", "groups", "entries", "deliveries", "curve", "nodes", "node_kind",
                 "drops", "stalls", "group_kind"):
        assert (out / "tables" / f"{name}.parquet" / "_SUCCESS").exists(), name
    assert not [p for p in out.iterdir() if p.name.startswith(".")]
    assert not [p for p in out.parent.iterdir() if ".tmp-" in p.name]
    assert json.loads((out / "dataset" / "manifest.json").read_text())["format"] == \
        "tinyssb-dataset"


def test_plots_are_pngs_and_no_heat_map_without_a_two_dimensional_layout(
        campaign: Campaign) -> None:
    plots = campaign.summary["plots"]
    # "hand" is no shipped scenario, line-5 is a line: neither gets a heat map
    assert set(plots) == {"convergence", "latency_cdf", "airtime_by_kind"}
    for rel in plots.values():
        assert (campaign.out / rel).read_bytes()[:8] == PNG


def test_index_shows_plots_comparison_runs_stalls_and_problems(campaign: Campaign) -> None:
    page = (campaign.out / "index.html").read_text()
    for rel in campaign.summary["plots"].values():
        assert f'src="{rel}"' in page
    assert "<h2>hand</h2>" in page and ">reference<" in page and ">default<" in page
    assert "side chain incomplete" in page and "hand-def" in page
    assert str(campaign.torn) in page and str(campaign.corrupt) in page


def test_terminal_summary_compares_policies_and_names_the_report(campaign: Campaign) -> None:
    out = campaign.stdout
    assert "analysis of 7 runs" in out
    hand = out[out.index("hand:"):]
    header = hand.splitlines()[1]
    assert header.split() == ["reference", "default"]
    assert "runs converged" in hand and "1/1" in hand and "0/1" in hand
    assert "stalled: " in out and "hand-def C" in out and "chunk 0 missing" in out
    assert f"report: {campaign.out / 'index.html'}" in out
    assert "analyze: converting 10 capture files" in campaign.stderr


def test_bad_files_are_reported_with_name_and_offset_and_the_rest_analyzed(
        campaign: Campaign) -> None:
    problems = campaign.summary["problems"]
    torn = [p for p in problems if p.startswith(str(campaign.torn))]
    corrupt = [p for p in problems if p.startswith(str(campaign.corrupt))]
    expected = (f"{campaign.torn}: torn last record at byte {campaign.torn_at}; "
                "kept the 3 records before it")
    assert torn == [expected]
    assert len(corrupt) == 1 and f"at byte {campaign.corrupt_at};" in corrupt[0]
    assert "file left out" in corrupt[0]
    runs = {r["run"] for r in campaign.summary["runs"]}
    assert runs == {"hand-ref", "hand-def", "gw-site", "gw-late", "cut", "line5-900s",
                    "line5-200s"}
    cut = campaign.run("cut")  # the kept prefix is analyzed: B's store record was torn off
    assert (cut["tx_frames"], cut["held_pairs"], cut["stalled_pairs"]) == (1, 1, 1)
    assert f"{campaign.torn}: torn last record at byte {campaign.torn_at}" in campaign.stdout


def test_page_shows_bound_and_efficiency_and_counts_runs_in_words(campaign: Campaign) -> None:
    page = (campaign.out / "index.html").read_text()
    line5 = page[page.index("<h2>line-5</h2>"):]
    line5 = line5[:line5.index("</table>")]
    assert "default: 2 runs" in line5
    assert "efficiency (bound / airtime)" in line5 and "airtime lower bound per run" in line5
    group = next(g for g in campaign.summary["groups"] if g["scenario"] == "line-5")
    assert f"{100 * group['efficiency']:.1f}%" in line5
    hand = page[page.index("<h2>hand</h2>"):]
    assert "reference: 1 run," in hand and "1 runs" not in page
    runs = page[page.index("<h2>Runs</h2>"):]
    assert "<th>lower bound</th><th>efficiency</th>" in runs
    # wide tables scroll inside their box instead of widening the page
    assert "<div class='table'><table>" in runs and "overflow-x: auto" in page
