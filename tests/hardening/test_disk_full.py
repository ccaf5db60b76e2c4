"""A full disk (issue 14, case 6): ``Node.receive`` never raises; the node stops storing,
keeps serving what it holds and resumes when space returns. Once in memory (a store that
fails like a full disk), once with real gateway processes on a small tmpfs (root only)."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.replication.events import Drop
from gateway.replication.node import STORE_RETRY
from gateway.store import MemoryStore
from gateway.store.memory import MemoryFeed
from gateway.store.replica import FeedBackend, Frontier

from ..replication.mesh import Mesh, author, converged
from ..runtime.harness import build_feeds, free_port, holdings, populate, stop, tinyssb, wait_for


class FullFeed(MemoryFeed):
    """A feed whose writes fail with ENOSPC while its store says the disk is full."""

    def __init__(self, store: FillingStore) -> None:
        super().__init__()
        self.store = store

    def append_entry(self, seq: int, packet: bytes, durable: bool) -> None:
        self.store.check()
        super().append_entry(seq, packet, durable)

    def append_chunk(self, seq: int, cnr: int, chunk: bytes, durable: bool) -> None:
        self.store.check()
        super().append_chunk(seq, cnr, chunk, durable)


class FillingStore(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.full = False
        self.refused = 0

    def check(self) -> None:
        if self.full:
            self.refused += 1
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def _new_backend(self, fid: bytes) -> tuple[FeedBackend, Frontier]:
        return FullFeed(self), Frontier.empty(fid)


def test_node_never_raises_stops_storing_keeps_serving_and_resumes() -> None:
    mesh = Mesh()
    src = mesh.add("src")
    full = FillingStore()
    mid = mesh.add("mid", store=full)
    dst = mesh.add("dst")
    key = author(src, 1, [b"entry %d " % i * (1 + i % 5) for i in range(30)])
    mesh.link("src", "mid")
    mesh.run_until(lambda: converged([mid], {key.fid: 30}), 300)
    more = author(src, 1, [b"later %d " % i * 9 for i in range(20)], mesh.now)
    assert more == key
    full.full = True
    drops: list[Drop | None] = []
    mesh.on_rx = lambda now, name, frame, report: drops.append(report.drop) if name == "mid" else None
    mesh.link("mid", "dst")
    # mid cannot store 31.. but serves 1..30 to dst meanwhile
    mesh.run_until(lambda: converged([dst], {key.fid: 30}), 600)
    assert full.refused > 0 and Drop.STORE in drops
    assert mid.store_trouble is not None and "space" in mid.store_trouble
    assert mid.store.replica(key.fid).max_seq == 30
    full.full = False  # space is back: mid stores again after STORE_RETRY, dst follows
    mesh.run_until(lambda: converged([mid, dst], {key.fid: 50}), 600 + STORE_RETRY)
    assert mid.store_trouble is None


def _tmpfs(path: Path, size: str) -> None:
    path.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                   check=True, capture_output=True)


def _status(data: Path) -> dict:
    out = subprocess.run([sys.executable, "-m", "gateway.cli", "--data", str(data), "status",
                          "--json"], capture_output=True, timeout=10, text=True, check=False)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")
def test_gateway_on_a_full_tmpfs_keeps_running_and_resumes(tmp_path: Path) -> None:
    feeds = build_feeds(20, 100, tag=61)
    a, b = tmp_path / "a", tmp_path / "b"
    populate(a, feeds)
    try:
        _tmpfs(b, "192k")
    except (subprocess.CalledProcessError, FileNotFoundError) as exc:
        pytest.skip(f"cannot mount a tmpfs here: {exc}")
    try:
        port = free_port()
        ga = tinyssb(a, "run", "--ws-listen", f"127.0.0.1:{port}", "--name", "a",
                     log=tmp_path / "a.log")
        gb = None
        try:
            wait_for(lambda: (a / "gateway.sock").exists(), 30, "gateway a starts", [ga])
            gb = tinyssb(b, "run", "--connect", f"ws://127.0.0.1:{port}", "--name", "b",
                         log=tmp_path / "b.log")
            wait_for(lambda: b"store cannot write" in (tmp_path / "b.log").read_bytes(), 60,
                     "b notices the full disk", [ga, gb])
            held = sum(n for n, _ in holdings(b).values())
            assert 0 < held < 20 * 100
            status = _status(b)  # still answering, still connected
            assert status["node"]["drops"].get("store", 0) > 0
            assert status["faces"]
            subprocess.run(["mount", "-o", "remount,size=8m", str(b)], check=True)
            want = {f[0].fid: (len(f), 0) for f in feeds}
            wait_for(lambda: all(holdings(b).get(fid) == w for fid, w in want.items()), 120,
                     "b completes once space is back", [ga, gb])
        finally:
            assert stop(*(p for p in (gb, ga) if p is not None)) == [0] * (1 + (gb is not None))
        log_b = (tmp_path / "b.log").read_text()
        assert "Traceback" not in log_b
    finally:
        subprocess.run(["umount", "-l", str(b)], check=False)
