"""`tinyssb dongle ...` against the simulated dongle on a pty, and its one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from firmware_sim.dongle import SimDongle
from gateway.cli import main

from .fake_dongle import FakeDongle


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def sim() -> Iterator[SimDongle]:
    with SimDongle(board="tbeam_sx1276") as dongle:
        yield dongle


def test_info_json_of_a_fresh_dongle(sim: SimDongle, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(capsys, "dongle", "info", "--port", sim.path, "--json")
    assert rc == 0, err
    info = json.loads(out)
    assert (info["board"], info["chip"], info["protocol"]) == ("tbeam_sx1276", "sx1276", 1)
    radio = info["radio"]
    assert radio["on"] is False  # the radio starts off after boot
    assert (radio["frequency_hz"], radio["bandwidth_hz"], radio["sf"]) == (868_300_000,
                                                                          125_000, 7)
    assert "EU868.a" in radio["profiles"] and radio["airtime_124_ms"] == pytest.approx(205.056)
    assert info["duty"] == {"permille": 10, "window_ms": 3_600_000}
    assert info["airtime"]["available_ms"] == 36_000 and info["queue_free"] == 4
    assert info["stats"]["tx_ok"] == 0


def test_set_then_info(sim: SimDongle, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(capsys, "dongle", "set", "-p", sim.path, "--profile", "EU868.b",
                       "--power", "14", "--sync", "0x12", "--duty", "0", "--radio", "on")
    assert rc == 0, err
    assert "radio     on: 868.3000 MHz, 250 kHz, SF7, CR 4/5, sync 0x12, 14 dBm" in out
    assert "duty      no limit" in out
    assert "profile   none (custom settings)" in out  # sync 0x12 matches no plan
    rc, out, err = run(capsys, "dongle", "set", "-p", sim.path, "--sync", "0x58",
                       "--frequency", "868.3M", "--duty", "10", "--duty-window", "60000")
    assert rc == 0, err
    assert "EU868.b" in out and "tbeam23/EU868.a" in out
    assert "10 permille over 60 s" in out
    rc, out, err = run(capsys, "dongle", "info", "-p", sim.path, "--json")
    info = json.loads(out)
    assert info["radio"]["on"] is True and info["radio"]["tx_power_dbm"] == 14
    assert info["radio"]["bandwidth_hz"] == 250_000
    assert info["duty"] == {"permille": 10, "window_ms": 60_000}


def test_value_the_radio_refuses(sim: SimDongle, capsys: pytest.CaptureFixture[str]) -> None:
    # the SX1276 with PA_BOOST does 2..20 dBm; 22 dBm is legal at 904.6 MHz (US915)
    rc, _out, err = run(capsys, "dongle", "set", "-p", sim.path, "--frequency", "904.6M",
                        "--power", "22")
    assert rc == 2
    assert err == ("tinyssb: error: the dongle refused TX_POWER 22: BAD_VALUE, value out of "
                   "range for this radio (nothing changed)\n")
    rc, out, _ = run(capsys, "dongle", "info", "-p", sim.path, "--json")
    assert json.loads(out)["radio"]["tx_power_dbm"] == 14  # unchanged boot default


def test_power_above_the_legal_limit_of_the_dongles_frequency_is_refused(
        sim: SimDongle, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 18: the dongle boots on 868.3 MHz, where 25 mW ERP (14 dBm) is the limit."""
    rc, _out, err = run(capsys, "dongle", "set", "-p", sim.path, "--power", "17")
    assert rc == 2 and err == (
        "tinyssb: error: --power 17 dBm is above the legal limit of 14 dBm at 868.3000 MHz "
        "(25 mW ERP in 868.0-868.6 MHz (ERC Rec 70-03)); use 14 or less\n")
    rc, _out, err = run(capsys, "dongle", "set", "-p", sim.path, "--profile", "EU433.a",
                        "--power", "12")
    assert rc == 2 and "above the legal limit of 10 dBm for EU433.a" in err
    rc, out, _ = run(capsys, "dongle", "info", "-p", sim.path, "--json")
    assert json.loads(out)["radio"]["tx_power_dbm"] == 14  # nothing was sent


def test_port_from_environment(sim: SimDongle, capsys: pytest.CaptureFixture[str],
                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TINYSSB_DONGLE", sim.path)
    rc, out, err = run(capsys, "dongle", "info")
    assert rc == 0, err
    assert "board     tbeam_sx1276 (sx1276)" in out and "firmware  0.1.0 (protocol 1)" in out


@pytest.mark.parametrize("args, needle", [
    (["dongle", "info"], "no dongle port: pass --port"),
    (["dongle", "info", "--port", "/nonexistent/ttyUSB9"],
     "cannot open dongle port /nonexistent/ttyUSB9: No such file or directory"),
    (["dongle", "set", "--port", "/nonexistent/ttyUSB9"], "nothing to set"),
    (["dongle", "set", "--port", "/nonexistent/ttyUSB9", "--profile", "MARS.a"],
     "unknown profile 'MARS.a'"),
    (["dongle", "info", "--port", "/nonexistent/ttyUSB9", "--board", "toaster"],
     "unknown board 'toaster'; known boards: heltec_v2, heltec_v3"),
])
def test_user_mistakes_are_one_line(args: list[str], needle: str,
                                    capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TINYSSB_DONGLE", raising=False)
    rc, _out, err = run(capsys, *args)
    assert rc == 2
    assert needle in err and err.count("\n") == 1 and "Traceback" not in err


def test_no_answer_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeDongle(tmp_path / "ttyQUIET", silent=True) as quiet:
        rc, _out, err = run(capsys, "dongle", "info", "--port", str(quiet.path),
                            "--timeout", "0.3")
    assert rc == 2 and err.count("\n") == 1
    assert "no dongle answers on" in err and "DETECT timed out after 0.3 s" in err


@pytest.mark.parametrize("option, value", [("--sf", "13"), ("--frequency", "lots"),
                                           ("--duty", "1001"), ("--radio", "maybe")])
def test_bad_option_values_exit_2(option: str, value: str,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["dongle", "set", "--port", "/dev/null", option, value])
    assert exit_info.value.code == 2
    assert option in capsys.readouterr().err


def test_profiles(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "dongle", "profiles")
    assert rc == 0
    line = next(x for x in out.splitlines() if x.startswith("EU868.b "))
    assert "868.3" in line and " 250 " in line and "102.5 ms" in line and line.endswith(" 351")
    rc, out, _ = run(capsys, "dongle", "profiles", "--json")
    rows = {r["name"]: r for r in json.loads(out)}
    assert rows["EU868.a"]["airtime_124_ms"] == pytest.approx(205.056)
    assert rows["E22-868"]["sync_word"] == 0x12 and len(rows) == 16


def test_help_texts() -> None:
    out = subprocess.run([sys.executable, "-m", "gateway.cli", "dongle", "--help"],
                         capture_output=True, text=True, check=True).stdout
    for sub in ("info", "set", "profiles"):
        assert sub in out
    out = subprocess.run([sys.executable, "-m", "gateway.cli", "dongle", "set", "--help"],
                         capture_output=True, text=True, check=True).stdout
    for option in ("--profile", "--frequency", "--bandwidth", "--sf", "--cr", "--power",
                   "--sync", "--duty", "--radio", "--port"):
        assert option in out


def test_detect_finds_the_dongle_by_its_handshake_and_skips_other_ports(
        sim: SimDongle, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import os
    import pty

    master, slave = pty.openpty()  # a serial device that never answers DETECT
    silent = os.ttyname(slave)
    try:
        rc, out, _ = run(capsys, "dongle", "detect", "--port", silent, "--port", sim.path,
                         "--timeout", "0.3")
        assert rc == 0
        assert out == (f"{sim.path}: tbeam_sx1276 (sx1276), firmware 0.1.0, 868.3000 MHz SF7 "
                       "125 kHz 14 dBm (EU868.a, tbeam23/EU868.b)\n")
        rc, out, _ = run(capsys, "dongle", "detect", "--port", silent, "--timeout", "0.3",
                         "--json")
        doc = json.loads(out)
        assert rc == 1 and doc["dongles"] == []
        assert doc["not_dongles"][0]["port"] == silent
        assert "no dongle answers" in doc["not_dongles"][0]["why"]
    finally:
        os.close(master)
        os.close(slave)
