"""`tinyssb status`: the peers view (per face and per neighbour) and `--watch`."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from gateway.cli import main
from gateway.logsetup import ENTRIES, FRAMES
from gateway.status_view import status_view
from gateway.transports.udp import UdpMulticast

from .harness import free_port, run, running, until


def render(st: dict[str, object]) -> str:
    console = Console(width=160, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(status_view(st))
    return console.export_text()


def test_two_gateways_see_each_other_as_neighbours_with_frames_in_and_out(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=FRAMES)  # what -vv shows
    caplog.set_level(logging.INFO, logger=ENTRIES)  # what -v shows
    port = free_port()

    def udp() -> UdpMulticast:
        return UdpMulticast("239.5.5.8", port, interface="127.0.0.1", loopback=True)

    async def scenario() -> dict[str, Any]:
        async with running(tmp_path / "a", [udp()], name="a") as a, \
                running(tmp_path / "b", [udp()], name="b") as b:
            b.node.publish(b.key, b"hello", asyncio.get_running_loop().time())
            await until(lambda: b.key.fid in a.store)
            return a.status()

    st = run(scenario)
    face = st["faces"][0]
    assert face["name"] == "udp" and face["rx"] > 0 and face["tx"] > 0
    assert face["last_heard_s"] is not None and face["last_heard_s"] < 30
    assert face["airtime"] is None  # no duty cycle on UDP
    (neighbour,) = face["neighbours"]  # b, by the address it sends from
    assert neighbour["peer"].startswith("127.0.0.1:") and neighbour["rx"] == face["rx"]
    text = render(st)
    assert "face / neighbour" in text and "RSSI / SNR" in text
    assert f"  {neighbour['peer']}" in text and "no limit" in text
    lines = [r.getMessage() for r in caplog.records]
    # frame lines name the face, the size and the kind; entry lines the feed and seq
    assert any(re.fullmatch(r"rx udp 124 B entry @.{11}\.\.#1", x) for x in lines), lines
    assert any(re.fullmatch(r"tx udp \d+ B [a-z_]+( @.*)?", x) for x in lines)
    assert any(re.fullmatch(r"entry @.+ #1", x) for x in lines)  # from the peer: not ours


def test_the_view_shows_radio_quality_and_the_duty_window() -> None:
    st = {"name": "roof", "id": "@x.ed25519", "uptime": 52.0, "policy": "default",
          "feeds": 2, "entries": 3, "goset": {"keys": 2, "state": "3c41015c"},
          "node": {"rx": 106, "tx": 78, "entries_stored": 3, "chunks_stored": 4,
                   "drops": {"no_match": 20}},
          "faces": [{"name": "lora", "kind": "broadcast", "queue": 2, "rx": 36, "tx": 26,
                     "last_heard_s": 1.2, "rssi": -100.0, "snr": 6.75, "neighbours": [],
                     "airtime": {"used_s": 0.4, "left_s": 35.6, "limit_s": 36.0,
                                 "window_s": 3600.0}}],
          "links": [{"name": "lora", "state": "up", "peers": ["lora"]}], "capture": None}
    text = render(st)
    row = next(line for line in text.splitlines() if line.startswith("lora "))
    assert row.split() == ["lora", "broadcast", "1", "s", "ago", "-100", "dBm,", "SNR",
                           "6.8", "dB", "36", "26", "2", "0.4", "s", "used,", "35.6", "s",
                           "left", "/", "1", "h"]


def test_watch_keeps_asking_until_ctrl_c(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    naps: list[float] = []

    def sleep(seconds: float) -> None:
        naps.append(seconds)
        if len(naps) == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr("gateway.cli_gateway.time.sleep", sleep)
    rc = main(["--data", str(tmp_path), "status", "--watch", "0.5", "--json"])
    assert rc == 0 and naps == [0.5, 0.5, 0.5]
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and all("no gateway is running" in json.loads(x)["error"]
                                   for x in lines)
    with pytest.raises(SystemExit) as exit_:
        main(["--data", str(tmp_path), "status", "--watch", "0"])
    assert exit_.value.code == 2 and "between 0.1 and 3600" in capsys.readouterr().err
