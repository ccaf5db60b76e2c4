"""Two `tinyssb run` processes on loopback: replication over WebSocket and UDP multicast,
checked with `tinyssb cat`, and a gateway killed mid-replication that resumes."""

from __future__ import annotations

import io
import signal
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from gateway.cli import main
from gateway.store import DiskStore
from gateway.wire.entry import Entry
from gateway.wire.ident import format_id

from ..replication.mesh import verified_log
from .harness import build_feeds, free_port, holdings, populate, stop, tinyssb, wait_for

N_FEEDS, N_ENTRIES = 50, 200
LIMIT = 240.0  # seconds: generous for a loaded CI machine


@pytest.fixture(scope="module")
def feeds() -> list[list[Entry]]:
    return build_feeds(N_FEEDS, N_ENTRIES)


def expected(feeds: list[list[Entry]]) -> dict[bytes, tuple[int, int]]:
    return {feed[0].fid: (len(feed), 0) for feed in feeds}


def complete(data: Path, feeds: list[list[Entry]]) -> bool:
    have = holdings(data)
    return all(have.get(fid) == want for fid, want in expected(feeds).items())


def cat(data: Path, fid: bytes) -> str:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["--data", str(data), "cat", format_id(fid)]) == 0
    return out.getvalue()


def assert_same_content(a: Path, b: Path, feeds: list[list[Entry]]) -> None:
    for feed in feeds:
        fid = feed[0].fid
        shown = cat(a, fid)
        assert shown == cat(b, fid)
        assert shown.count("--- #") == N_ENTRIES
    # and once through the real command line
    fid = format_id(feeds[-1][0].fid)
    outs = [subprocess.run([sys.executable, "-m", "gateway.cli", "--data", str(d), "cat", fid],
                           capture_output=True, check=True).stdout for d in (a, b)]
    assert outs[0] == outs[1] and outs[0].count(b"--- #") == N_ENTRIES
    with DiskStore(b, readonly=True) as store:
        for feed in feeds:
            log = verified_log(store, feed[0].fid)
            assert [p for p, _ in log] == [e.packet for e in feed]
            assert [tuple(c) for _, c in log] == [e.chunks for e in feed]


def test_websocket(tmp_path: Path, feeds: list[list[Entry]]) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    populate(a, feeds)
    port = free_port()
    ga = tinyssb(a, "run", "--ws-listen", f"127.0.0.1:{port}", "--name", "a",
                 log=tmp_path / "a.log")
    try:
        wait_for(lambda: (a / "gateway.sock").exists(), 30, "gateway a starts", [ga])
        gb = tinyssb(b, "run", "--connect", f"ws://127.0.0.1:{port}", "--name", "b",
                     log=tmp_path / "b.log")
        try:
            wait_for(lambda: complete(b, feeds), LIMIT, "b replicates a's feeds", [ga, gb])
        finally:
            assert stop(gb) == [0]
    finally:
        assert stop(ga) == [0]
    assert_same_content(a, b, feeds)


def test_udp_multicast_on_loopback(tmp_path: Path, feeds: list[list[Entry]]) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    small = [feed[:60] for feed in feeds[:20]]  # UDP has no flow control: keep it shorter
    populate(a, small)
    port = free_port()
    config = tmp_path / "udp.toml"
    # the face's pace (25 frames/s after 4 by default, for small radio peers: 2,100
    # frames took 90 s here) raised for two gateways on one host; tests/replication/
    # test_pacing.py checks the default pace itself
    config.write_text(f'[udp]\ninterface = "127.0.0.1"\nloopback = true\nport = {port}\n'
                      'rate = 400\nburst = 16\n')
    procs = [tinyssb(d, "run", "--config", str(config), "--name", d.name,
                     log=tmp_path / f"{d.name}.log") for d in (a, b)]
    try:
        wait_for(lambda: complete(b, small), LIMIT, "b replicates a's feeds over UDP", procs)
    finally:
        assert stop(*procs) == [0, 0]
    for feed in small:
        assert cat(a, feed[0].fid) == cat(b, feed[0].fid)
    log = (tmp_path / "b.log").read_text()
    assert "face udp up" in log


def test_a_killed_gateway_loses_nothing_and_resumes(tmp_path: Path,
                                                    feeds: list[list[Entry]]) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    populate(a, feeds)
    port = free_port()
    ga = tinyssb(a, "run", "--ws-listen", f"127.0.0.1:{port}", log=tmp_path / "a.log")
    try:
        wait_for(lambda: (a / "gateway.sock").exists(), 30, "gateway a starts", [ga])
        total = N_FEEDS * N_ENTRIES

        def some() -> bool:
            return sum(n for n, _ in holdings(b).values()) >= total // 4

        gb = tinyssb(b, "run", "--connect", f"ws://127.0.0.1:{port}", log=tmp_path / "b.log")
        wait_for(some, LIMIT, "b gets a quarter", [ga, gb])
        stop(gb, sig=signal.SIGKILL)
        before = holdings(b)
        assert sum(n for n, _ in before.values()) < total  # killed mid-way
        gb = tinyssb(b, "run", "--connect", f"ws://127.0.0.1:{port}", log=tmp_path / "b.log")
        try:
            wait_for(lambda: complete(b, feeds), LIMIT, "b resumes and completes", [ga, gb])
        finally:
            assert stop(gb) == [0]
    finally:
        assert stop(ga) == [0]
    after = holdings(b)
    assert all(after[fid][0] >= n for fid, (n, _) in before.items())
    assert_same_content(a, b, feeds)
