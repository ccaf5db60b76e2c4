"""``tinyssb sim scan``: a scenario over many seeds, late entries counted, policy settings
changed from the command line."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from firmware_sim.runner import run_scenario
from firmware_sim.scan import parse_seeds, parse_settings, scan, seed_result
from firmware_sim.scenario import load_scenario
from firmware_sim.summary import Summary, tally
from gateway.errors import UserError
from gateway.replication.policy import DEFAULT, REFERENCE

from .test_cli import main


def test_seed_lists_and_ranges() -> None:
    assert parse_seeds("3") == [3]
    assert parse_seeds("1-4") == [1, 2, 3, 4]
    assert parse_seeds("1,4,9-11, 4") == [1, 4, 9, 10, 11]
    for bad in ("", "a", "1-", "5-1", "1,,2", "1-5000"):
        with pytest.raises(ValueError):
            parse_seeds(bad)


@given(st.lists(st.integers(0, 50), min_size=1, max_size=8))
def test_any_list_of_seeds_reads_back(seeds: list[int]) -> None:
    assert parse_seeds(",".join(map(str, seeds))) == list(dict.fromkeys(seeds))


def test_settings_are_typed_and_checked_as_a_config_file_is() -> None:
    policy = parse_settings("default", ["credit=8", "answer_window=48", "push=false"])
    assert (policy.credit, policy.answer_window, policy.push) == (8, 48.0, False)
    assert policy.name == "default+custom"
    assert parse_settings("reference", []) == REFERENCE
    assert parse_settings("default", []) == DEFAULT
    for bad, message in ((["foo=1"], "unknown policy setting 'foo'"),
                         (["credit"], "KEY=VALUE"),
                         (["credit=x"], "must be a number"),
                         (["credit=0"], "must be positive")):
        with pytest.raises(ValueError, match=message):
            parse_settings("default", bad)


def _summary(entries: list[tuple[float, list[float | None]]]) -> Summary:
    c = tally(["a", "b", "c"], entries)
    return Summary({}, c, Counter(), {"entry": 12.5}, Counter(), 0,
                   Counter({"collision": 3}), 0.0)


def test_an_entry_is_late_where_one_node_took_longer_than_900_s_or_never() -> None:
    summary = _summary([
        (0.0, [10.0, 20.0, 950.0]),     # late at c
        (0.0, [10.0, None, 20.0]),      # never at b
        (100.0, [101.0, 102.0, 999.0]),  # 899 s: on time
        (3000.0, [None, None, None]),   # too recent to judge at 3,600 s
    ])
    r = seed_result(summary, 7, 3600.0, besides=["c"])
    assert (r.seed, r.entries, r.late, r.late_besides) == (7, 3, 2, 1)
    assert (r.airtime, r.collisions) == (12.5, 3)
    assert r.converged_at is None and r.p95 is not None


def test_a_scan_is_the_runs_it_is_made_of_whichever_the_number_of_processes() -> None:
    scenario = load_scenario("line-5").with_(duration=900.0)
    one = scan(scenario, [1, 2], DEFAULT, jobs=1)
    two = scan(scenario, [1, 2], DEFAULT, jobs=2)
    strip = [(r.seed, r.converged_at, r.pairs, r.p95, r.late, r.airtime) for r in one]
    assert strip == [(r.seed, r.converged_at, r.pairs, r.p95, r.late, r.airtime) for r in two]
    alone = run_scenario(scenario, None, seed=2, policy="default")
    assert one[1].converged_at == alone.convergence.time
    assert one[1].airtime == pytest.approx(sum(alone.tx_airtime.values()))


def test_scan_prints_a_row_per_seed_and_the_totals(capsys: pytest.CaptureFixture[str]) -> None:
    assert main("sim", "scan", "line-5", "--seeds", "1,2", "--duration", "20m",
                "--set", "credit=8", "--besides", "n4", "--jobs", "1") == 0
    out = capsys.readouterr().out
    assert "line-5, 2 seeds, 1200 s each, policy default+custom" in out
    assert "late besides" in out and "late entries: 0 of 12 (0.0%)" in out
    assert "2 of 2 seeds within 900 s" in out


def test_scan_mistakes_are_one_line_each() -> None:
    with pytest.raises(UserError, match="--set: unknown policy setting 'nope'"):
        main("sim", "scan", "line-5", "--set", "nope=1")
    with pytest.raises(UserError, match="--seeds: "):
        main("sim", "scan", "line-5", "--seeds", "9-2")
    with pytest.raises(UserError, match="--besides: scenario line-5 has no node zz"):
        main("sim", "scan", "line-5", "--besides", "zz")
    with pytest.raises(UserError, match="--set: policy setting 'credit' must be a number"):
        main("sim", "run", "line-5", "--no-capture", "--set", "credit=many")


def test_run_takes_policy_settings(capsys: pytest.CaptureFixture[str]) -> None:
    assert main("sim", "run", "line-5", "--no-capture", "--duration", "10m",
                "--set", "push_window=48") == 0
    assert "policy default+custom" in capsys.readouterr().out
