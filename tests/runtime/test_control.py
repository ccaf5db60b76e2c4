"""`tinyssb status` and `tinyssb publish` against a running gateway (its control socket)."""

from __future__ import annotations

import asyncio
import json
import os
import stat
from pathlib import Path

import pytest

from gateway.cli import main
from gateway.runtime.control import SOCKET_FILE, ControlError, request
from gateway.store import DiskStore

from .harness import run, running


def test_status_and_publish_reach_the_running_gateway(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "gw"

    async def scenario() -> tuple[dict[str, object], int, int, str]:
        async with running(data, [], name="attic") as gw:
            sock = data / SOCKET_FILE
            assert stat.S_IMODE(os.stat(sock).st_mode) & 0o077 == 0  # owner only
            st = await asyncio.to_thread(request, data, {"cmd": "status"})
            rc_pub = await asyncio.to_thread(main, ["--data", str(data), "publish", "hello"])
            rc_status = await asyncio.to_thread(main, ["--data", str(data), "status"])
            out = capsys.readouterr().out
            assert gw.store is not None
            assert gw.store.replica(gw.key.fid).max_seq == 1
            with pytest.raises(ControlError, match="unknown request 'reboot'"):
                await asyncio.to_thread(request, data, {"cmd": "reboot"})
            return st, rc_pub, rc_status, out

    st, rc_pub, rc_status, out = run(scenario)
    assert st["name"] == "attic" and st["feeds"] == 0 and st["entries"] == 0
    assert st["faces"] == [] and st["policy"] == "default"
    assert rc_pub == 0 and rc_status == 0
    assert out.splitlines()[0] == "1"  # the seq `tinyssb publish` printed
    assert "gateway attic" in out and "1 feeds, 1 entries" in out
    assert not (data / SOCKET_FILE).exists()  # removed at shutdown
    with DiskStore(data, readonly=True) as store:
        assert len(store.feeds()) == 1
        (fid,) = store.feeds()
        assert store.replica(fid).max_seq == 1


def test_status_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "gw"

    async def scenario() -> int:
        async with running(data, []):
            return await asyncio.to_thread(main, ["--data", str(data), "status", "--json"])

    assert run(scenario) == 0
    st = json.loads(capsys.readouterr().out)
    assert set(st) >= {"name", "id", "feeds", "entries", "faces", "links", "goset", "node"}


def test_entries_published_through_the_gateway_are_in_its_capture(tmp_path: Path) -> None:
    from gateway.capture import Direction, read_capture

    data, capture = tmp_path / "gw", tmp_path / "gw.cbor"
    long_text = "x" * 300  # a post with a side chain

    async def scenario() -> bytes:
        async with running(data, [], capture=capture) as gw:
            for text in ("short", long_text):
                assert await asyncio.to_thread(
                    main, ["--data", str(data), "publish", text]) == 0
            await asyncio.sleep(0.2)  # the next pump records them
            return gw.key.fid

    fid = run(scenario)
    stored = [(r.seq, r.cnr) for r in read_capture(capture)
              if r.dir is Direction.STORE and r.feed == fid and r.face is None]
    with DiskStore(data, readonly=True) as store:
        n2 = 0
        while store.read_chunk(fid, 2, n2) is not None:
            n2 += 1
    assert n2 >= 3
    assert stored == [(1, None), (2, None), *[(2, c) for c in range(n2)]]
