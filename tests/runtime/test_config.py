"""The gateway's config file and flags: what a person writes, what they get told."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from gateway.cli import main
from gateway.runtime.config import EXAMPLE, ConfigError, load_config
from gateway.wire.lora import PROFILES, power_limit


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "gateway.toml"
    path.write_text(text)
    return path


def test_the_example_file_parses_to_the_defaults(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, EXAMPLE), required=True)
    assert cfg.name == "gateway" and cfg.policy.name == "default"
    assert not cfg.has_faces()
    assert (cfg.scrub_interval, cfg.scrub_batch) == (5.0, 100)


def test_a_full_file(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, """
name = "roof"
status_interval = 2
capture = "~/cap.cbor"
[policy]
preset = "reference"
credit = 4
[websocket]
listen = [8080, "127.0.0.1:9000"]
connect = ["ws://peer.example:8989"]
[udp]
interface = "127.0.0.1"
loopback = true
rate = 10
burst = 2
[serial]
port = "/dev/ttyACM0"
profile = "EU868.a"
duty_cycle = 0.1
[ble]
address = "AA:BB:CC:DD:EE:FF"
[isp]
farewell_timeout = 60
"""), required=True)
    assert cfg.name == "roof" and cfg.status_interval == 2
    assert cfg.capture is not None and cfg.capture.name == "cap.cbor"
    assert cfg.policy.name == "reference+custom" and cfg.policy.credit == 4
    assert cfg.ws_listen == [("0.0.0.0", 8080), ("127.0.0.1", 9000)]
    assert cfg.ws_connect == ["ws://peer.example:8989"]
    assert cfg.udp is not None and cfg.udp.interface == "127.0.0.1" and cfg.udp.loopback
    assert cfg.udp.rate == 10.0 and cfg.udp.burst == 2
    assert cfg.serial is not None and cfg.serial.params.bandwidth_hz == 125_000
    assert cfg.serial.duty_cycle == 0.1
    assert cfg.ble is not None and cfg.ble.address == "AA:BB:CC:DD:EE:FF"
    assert cfg.isp_farewell_timeout == 60.0


@pytest.mark.parametrize("text, expected", [
    ('name = "x"\nlisten = 5\n', "gateway.toml:2: listen: unknown key"),
    ('[websocket]\n\nlistn = [1]\n', "gateway.toml:3: websocket.listn: unknown key 'listn'"),
    ('[udp]\nport = 70000\n', "gateway.toml:2: udp.port: a port is 1..65535"),
    ('[udp]\nloopback = "yes"\n', "gateway.toml:2: udp.loopback: expected bool"),
    ('[isp]\nfarewell_timeout = 0\n', "gateway.toml:2: isp.farewell_timeout: must be between 1"),
    ('[udp]\nburst = 0\n', "gateway.toml:2: udp.burst: must be a whole number from 1"),
    ('[udp]\nrate = -1\n', "gateway.toml:2: udp.rate: must be between 0 and"),
    ('[serial]\nport = "/dev/x"\nprofile = "EU999"\n',
     "gateway.toml:3: serial.profile: unknown radio profile 'EU999'"),
    ('[websocket]\nconnect = ["http://x:1"]\n', ("gateway.toml:2: websocket.connect: not a "
     "WebSocket URL")),
    ('status_interval = true\n', "gateway.toml:1: status_interval: expected a number"),
    ('[policy]\npreset = "fast"\n', "gateway.toml:2: [policy]: unknown policy 'fast'"),
    ('[policy]\ncredits = 3\n', "gateway.toml:2: [policy]: unknown policy setting 'credits'"),
    ('udp = 1\n', "gateway.toml:1: udp: must be a table"),
    ('name = \n', "gateway.toml: not valid TOML"),
    ('[serial]\nport = "/dev/x"\npower = 20\n', ("gateway.toml:3: serial.power: 20 dBm is "
     "above the legal limit of 14 dBm for EU868.a")),
    ('[serial]\nport = "/dev/x"\nprofile = "EU433.a"\npower = 14\n',
     "serial.power: 14 dBm is above the legal limit of 10 dBm for EU433.a"),
    ('[serial]\nport = "/dev/x"\nboard = "heltec-v9"\n',
     "gateway.toml:3: serial.board: unknown board 'heltec-v9'; known boards: "),
    ('status_interval = -1\n', "gateway.toml:1: status_interval: must be between 0 and"),
    ('scrub_interval = -5\n', "gateway.toml:1: scrub_interval: must be between 0 and"),
    ('scrub_batch = 0\n', "gateway.toml:1: scrub_batch: must be a whole number from 1 to"),
    ('scrub_batch = 2.5\n', "gateway.toml:1: scrub_batch: expected int, got 2.5"),
])
def test_mistakes_name_the_line_and_the_key(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(write(tmp_path, text), required=True)
    assert expected in str(err.value)
    assert "\n" not in str(err.value)


def test_every_profile_defaults_to_a_legal_power_and_eu868_to_14_dbm_or_less(
        tmp_path: Path) -> None:
    for name, params in PROFILES.items():
        assert params.tx_power_dbm <= power_limit(name).max_dbm, name
        if "EU868" in name or name == "E22-868":
            assert params.tx_power_dbm <= 14, name
    cfg = load_config(write(tmp_path, '[serial]\nport = "/dev/x"\n'), required=True)
    assert cfg.serial is not None and cfg.serial.params.tx_power_dbm == 14
    cfg = load_config(write(tmp_path, '[serial]\nport = "/dev/x"\nprofile = "US915.a"\n'
                            'power = 22\n'), required=True)
    assert cfg.serial is not None and cfg.serial.params.tx_power_dbm == 22


def test_a_file_power_is_checked_again_under_a_profile_flag(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = write(tmp_path, '[serial]\nport = "/dev/x"\nprofile = "US915.a"\npower = 20\n')
    rc, err = run_cli(tmp_path, capsys, "run", "--config", str(cfg), "--profile", "EU868.a")
    assert rc == 2 and "above the legal limit of 14 dBm for EU868.a" in err


def test_a_missing_named_file_is_an_error_but_a_missing_default_is_not(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.toml", required=True)
    assert not load_config(tmp_path / "nope.toml", required=False).has_faces()


def run_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    rc = main(["--data", str(tmp_path / "data"), *argv])
    return rc, capsys.readouterr().err


def test_run_with_a_malformed_config_exits_2_with_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = write(tmp_path, "[websocket]\nlisten = [0, 99999]\n")
    rc, err = run_cli(tmp_path, capsys, "run", "--config", str(cfg))
    assert rc == 2
    assert err.count("\n") == 1 and "gateway.toml:2: websocket.listen" in err


@pytest.mark.parametrize("argv, expected", [
    ((), "no links to run"),
    (("--connect", "localhost:80"), "not a WebSocket URL"),
    (("--profile", "EU868.b"), "--profile needs a dongle"),
    (("--serial", "/dev/x", "--profile", "XX"), "unknown radio profile 'XX'"),
    (("--udp", "--policy", "fastest"), "unknown policy 'fastest'"),
    (("--config", "/nonexistent/g.toml"), "config file /nonexistent/g.toml not found"),
    (("--serial", "/dev/tinyssb-no-such-port"), ("cannot open dongle port "
     "/dev/tinyssb-no-such-port: No such file or directory")),
    # issue 18: a negative interval busy-looped the status line
    (("--udp", "--status-interval", "-1"), "--status-interval: must be between 0 and 86400, got -1"),
    (("--scrub-interval", "-1"), "--scrub-interval: must be between 0 and 86400, got -1"),
    # issue 18: a mistyped board was a traceback
    (("--serial", "/dev/x", "--board", "heltec-v9"), "unknown board 'heltec-v9'"),
    # issue 18: transmit power within the region's legal limit
    (("--serial", "/dev/x", "--power", "20"), ("20 dBm is above the legal limit of 14 dBm "
     "for EU868.a (25 mW ERP in 868.0-868.6 MHz (ERC Rec 70-03)); use 14 or less")),
    (("--serial", "/dev/x", "--profile", "EU433.a", "--power", "14"),
     "above the legal limit of 10 dBm for EU433.a"),
    (("--udp", "--power", "10"), "--power needs a dongle: give --serial PORT too"),
])
def test_run_refuses_bad_flags_with_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...],
        expected: str) -> None:
    rc, err = run_cli(tmp_path, capsys, "run", *argv)
    assert rc == 2
    lines = [line for line in err.splitlines() if line.startswith("tinyssb: error:")]
    assert len(lines) == 1 and expected in lines[0], err


def test_status_without_a_gateway_says_how_to_start_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, err = run_cli(tmp_path, capsys, "status")
    assert rc == 2 and "no gateway is running" in err and "tinyssb run" in err


def test_example_config_is_printed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--data", str(tmp_path), "run", "--example-config"]) == 0
    assert capsys.readouterr().out == EXAMPLE


def test_run_on_a_busy_port_exits_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        rc, err = run_cli(tmp_path, capsys, "run", "--ws-listen", f"127.0.0.1:{port}")
        assert rc == 2 and err.splitlines()[-1] == (
            f"tinyssb: error: cannot listen on 127.0.0.1:{port}: address already in use")
    assert not (tmp_path / "data" / "gateway.sock").exists()  # nothing left behind
    assert not (tmp_path / "data" / "secret.json").exists()  # no identity for a failed run
