"""`tinyssb status` and `tinyssb publish` against a running gateway (its control socket)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import stat
import threading
from pathlib import Path

import pytest

from gateway.cli import main
from gateway.runtime import control
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


def _answer_once(server: socket.socket, answer: dict[str, object]) -> None:
    conn, _ = server.accept()
    with conn:
        conn.recv(65536)
        conn.sendall(json.dumps(answer).encode() + b"\n")


def test_a_command_waits_for_a_gateway_that_holds_the_store_but_is_still_starting(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The gateway opens (locks) its store before its control socket listens; `tinyssb
    publish` (and the isp commands) in that window used to say "no gateway is running"
    and exit 2. The socket comes up while the command waits (its first pause)."""
    data = tmp_path / "gw"
    data.mkdir()
    main(["--data", str(data), "id"])
    capsys.readouterr()
    holder = DiskStore(data)  # the starting gateway's lock
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    pauses: list[float] = []

    def pause(seconds: float) -> None:
        if not pauses:  # the gateway's socket comes up now
            server.bind(str(data / SOCKET_FILE))
            server.listen(1)
            threading.Thread(target=_answer_once, args=(server, {"ok": True, "seq": 1}),
                             daemon=True).start()
        pauses.append(seconds)

    monkeypatch.setattr(control.time, "sleep", pause)
    try:
        assert main(["--data", str(data), "publish", "hello"]) == 0
    finally:
        holder.close()
        server.close()
    assert len(pauses) == 1 and capsys.readouterr().out.strip() == "1"


def test_a_gateway_that_never_listens_gets_one_line_naming_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter(range(0, 1000, 5))
    monkeypatch.setattr(control.time, "monotonic", lambda: float(next(clock)))
    monkeypatch.setattr(control.time, "sleep", lambda s: None)
    with pytest.raises(ControlError, match="holds .* but has not answered .* for 15 s"):
        control.request_holder(tmp_path, {"cmd": "status"})


def test_a_gateway_starting_while_a_command_holds_the_store_waits_for_it(
        tmp_path: Path) -> None:
    """`tinyssb isp contracts` run while no gateway holds the directory opens it itself;
    a gateway started in that moment used to exit 2 ("in use by another tinyssb
    process"). It now waits for the command to let go."""
    data = tmp_path / "gw"
    data.mkdir()
    holder = DiskStore(data)  # the offline command

    async def scenario() -> str:
        loop = asyncio.get_running_loop()
        loop.call_later(0.3, holder.close)
        async with running(data, [], name="late") as gw:
            return gw.config.name

    try:
        assert run(scenario) == "late"
    finally:
        holder.close()


def test_a_gateway_on_a_directory_another_gateway_holds_fails_naming_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gateway.runtime import gateway as gateway_module
    from gateway.store import StoreLockedError

    monkeypatch.setattr(gateway_module, "STORE_LOCK_WAIT_S", 0.2)
    data = tmp_path / "gw"
    data.mkdir()

    async def scenario() -> None:
        async with running(data, []):
            raise AssertionError("a gateway started on a directory another one holds")

    with DiskStore(data), pytest.raises(StoreLockedError, match="in use by another"):
        run(scenario)
