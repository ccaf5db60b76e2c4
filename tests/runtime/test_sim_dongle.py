"""A real `tinyssb run` process joins a simulated LoRa mesh through the simulator's
dongle on a pseudo-terminal (`tinyssb sim dongle`) and receives the mesh's feeds."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from .harness import holdings, stop, tinyssb, wait_for

# Three nodes 30 m apart; the middle one is the dongle. Under the default policy the
# gateway holds both feeds 2-6 s after it starts. (Under the reference dialect it took
# 70-170 s and sometimes longer than the mesh ran: both authors answer each WANT in the
# same instant, and the gateway's CHNK right after its WANT leaves it deaf to the answers.)
# The mesh runs longer than the test waits, and is stopped by it.
SCENARIO = """
name = "dongle-test"
description = "two authors and a dongle between them"
seed = 3
duration = "10m"
policy = "default"

[radio]
profile = "EU868.c"
duty_cycle = 0.1

[[nodes]]
layout = "line"
prefix = "n"
count = 3
spacing = 30

[[feeds]]
authors = ["n0", "n2"]
entries = 2
interval = "1s"
start = "1s"
size = 150
"""


def test_a_gateway_process_receives_the_mesh_feeds_through_the_simulated_dongle(
        tmp_path: Path) -> None:
    scenario = tmp_path / "mesh.toml"
    scenario.write_text(SCENARIO)
    mesh = subprocess.Popen(
        [sys.executable, "-m", "gateway.cli", "sim", "dongle", str(scenario), "--node", "n1",
         "--out", str(tmp_path / "mesh.cbor")],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert mesh.stdout is not None
        line = mesh.stdout.readline()  # "simulated dongle for node n1 (EU868.c): PATH"
        assert "simulated dongle for node n1" in line, line
        pty = line.split()[-1]
        data = tmp_path / "gw"
        gw = tinyssb(data, "run", "--serial", pty, "--profile", "EU868.c", "--policy",
                     "default", "--capture", str(tmp_path / "gw.cbor"),
                     log=tmp_path / "gw.log")
        try:
            def complete() -> bool:
                have = holdings(data)
                return len(have) == 2 and all(v == (2, 0) for v in have.values())

            # a real-time mesh: seconds on an idle machine; the limit leaves room for a
            # loaded one
            wait_for(complete, 300, "the gateway gets both authors' feeds", [gw, mesh])
        finally:
            assert stop(gw) == [0]
    finally:
        stop(mesh, sig=signal.SIGINT)
    log = (tmp_path / "gw.log").read_text()
    assert "configured: 868.3000 MHz, 500 kHz, SF7" in log
    assert (tmp_path / "gw.cbor").exists()


def _ignore_sigint() -> None:
    # what a non-interactive shell does to the commands it starts in the background
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_the_mesh_stops_on_ctrl_c_or_sigterm_whatever_it_inherited(tmp_path: Path) -> None:
    """The mesh ends cleanly (capture finished, summary printed, exit 0) on SIGINT even
    when started with SIGINT ignored, and on SIGTERM, as a service manager stops it."""
    scenario = tmp_path / "mesh.toml"
    scenario.write_text(SCENARIO.replace('duration = "10m"', 'duration = "1h"'))
    for sig in (signal.SIGINT, signal.SIGTERM):
        out = tmp_path / f"mesh-{sig.name}.cbor"
        mesh = subprocess.Popen(
            [sys.executable, "-m", "gateway.cli", "sim", "dongle", str(scenario), "--node",
             "n1", "--out", str(out)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            preexec_fn=_ignore_sigint)  # noqa: PLW1509 - the child runs no threads yet
        try:
            assert mesh.stdout is not None
            assert "simulated dongle for node n1" in mesh.stdout.readline()
            mesh.send_signal(sig)
            said, _ = mesh.communicate(timeout=30)
        finally:
            if mesh.poll() is None:
                mesh.kill()
                mesh.wait()
        assert mesh.returncode == 0, sig.name
        assert "dongle: " in said
        assert out.exists() and not out.with_name(out.name + ".part").exists()
