"""``tinyssb sim``: list, run and bad input, through an argparse tree like gateway.cli's."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from firmware_sim.cli import add_sim_commands, parse_duration
from firmware_sim.summary import convergence
from gateway.cli import main as cli_main
from gateway.errors import UserError


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tinyssb")
    p.add_argument("--data", default="unused")
    p.add_argument("-v", "--verbose", action="count", default=0)
    add_sim_commands(p.add_subparsers(dest="command", required=True))
    return p


def main(*argv: str) -> int:
    args = parser().parse_args(argv)
    return int(args.func(args))


def test_list_shows_the_shipped_scenarios(capsys: pytest.CaptureFixture[str]) -> None:
    assert main("sim", "list") == 0
    out = capsys.readouterr().out
    for name in ("line-5", "grid-25", "random-50", "city-100", "islands-ip"):
        assert name in out
    assert "100" in out and "EU868.a" in out


def test_run_writes_the_capture_and_prints_the_summary(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "l5.cbor"
    assert main("sim", "run", "line-5", "--out", str(out), "--policy", "reference",
                "--seed", "3", "--duration", "20m") == 0
    printed = capsys.readouterr().out
    assert "scenario line-5: 5 nodes, seed 3, policy reference" in printed
    assert "kind" in printed and "airtime" in printed and f"capture: {out}" in printed
    c = convergence(out)
    assert c.nodes == 5 and c.entries == 6


def test_run_default_capture_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main("sim", "run", "line-5", "--duration", "60") == 0
    assert (tmp_path / "line-5-default-seed1.cbor").is_file()


def test_a_bad_scenario_is_one_user_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('duration = 60\n[radio]\nsf = 14\n[[nodes]]\nlayout = "line"\n'
                   'count = 2\nspacing = 10\n')
    with pytest.raises(UserError, match=r"bad.toml:3: radio.sf: spreading factor 14"):
        main("sim", "run", str(bad))
    with pytest.raises(UserError, match="no such scenario"):
        main("sim", "run", "nowhere-42")
    with pytest.raises(UserError, match="has no node 'zz'"):
        main("sim", "dongle", "line-5", "--node", "zz")


def test_durations() -> None:
    assert parse_duration("90") == 90 and parse_duration("15m") == 900
    assert parse_duration("24h") == 86400 and parse_duration("250ms") == 0.25
    with pytest.raises(argparse.ArgumentTypeError):
        parse_duration("soon")
    with pytest.raises(argparse.ArgumentTypeError):
        parse_duration("0")
    with pytest.raises(SystemExit):
        parser().parse_args(["sim", "run", "line-5", "--policy", "fastest"])


def test_dongle_mode_prints_the_pty_and_runs_in_real_time(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main("sim", "dongle", "line-5", "--node", "n2", "--duration", "0.5") == 0
    out = capsys.readouterr().out
    assert "simulated dongle for node n2 (EU868.a): /" in out
    assert "scenario line-5: 4 nodes" in out  # n2 is the dongle's: not simulated
    assert "dongle: 0 frames sent" in out


def test_a_large_capture_is_announced_before_the_run_with_the_ways_out(
        tmp_path: Path, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 18: `sim run city-100` wrote 1.2 GB without a word."""
    from firmware_sim.estimate import capture_bytes
    from firmware_sim.scenario import load_scenario

    city = load_scenario("city-100")
    assert 0.5e9 < (capture_bytes(city) or 0) < 2e9  # measured: 1.2 GB
    assert (capture_bytes(load_scenario("line-5")) or 0) < 1e6
    started: list[object] = []

    def no_run(scenario: object, out: object, **kw: object) -> object:
        started.append(out)
        raise KeyboardInterrupt  # the warning must come before the run

    monkeypatch.setattr("firmware_sim.cli.run_scenario", no_run)
    monkeypatch.chdir(tmp_path)
    with caplog.at_level("WARNING", logger="tinyssb.sim"):
        assert cli_main(["sim", "run", "city-100"]) == 130
    (msg,) = [r.getMessage() for r in caplog.records]
    assert msg.startswith("city-100 will write a capture of about ")
    assert "name it city-100-default-seed1.cbor.zst to compress it" in msg
    assert "--no-capture" in msg and started == [Path("city-100-default-seed1.cbor")]
    caplog.clear()
    with caplog.at_level("WARNING", logger="tinyssb.sim"):
        assert cli_main(["sim", "run", "city-100", "--no-capture"]) == 130
    assert caplog.records == [] and started[-1] is None


def test_no_capture_prints_the_summary_and_writes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli_main(["sim", "run", "line-5", "--no-capture", "--duration", "60"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("scenario line-5") and "capture:" not in out
    assert list(tmp_path.iterdir()) == []
