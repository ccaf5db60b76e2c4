"""Non-reading WebSocket peers must not stall a gateway (issue 14, case 1).

A real gateway process on loopback with an honest peer (another gateway) attached; a
hostile process opens connections that send "WANT everything" as fast as they can and
never read, plus connections that send garbage. Throughout: ``status`` answers within a
second, entries published meanwhile reach the honest peer, the non-readers are
disconnected, and SIGTERM ends the gateway promptly."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from gateway.runtime.control import request
from gateway.store import DiskStore
from gateway.store.keys import load_or_create_key
from gateway.wire.goset import want_dmx, xor_keys
from gateway.wire.want import encode_want

from ..runtime.harness import build_feeds, free_port, holdings, populate, stop, tinyssb, wait_for

ATTACK_S = 12.0


def test_non_readers_do_not_stall_status_sigterm_or_the_honest_peer(tmp_path: Path) -> None:
    feeds = build_feeds(20, 60, tag=91)
    a, b = tmp_path / "a", tmp_path / "b"
    populate(a, feeds)
    key, _ = load_or_create_key(a)
    with DiskStore(a) as store:
        store.publish(key, b"first")
    keys = sorted([f[0].fid for f in feeds] + [key.fid])
    want = encode_want(want_dmx(xor_keys(keys)), 0, [1] * len(keys))
    port = free_port()
    ga = tinyssb(a, "run", "--ws-listen", f"127.0.0.1:{port}", "--name", "a",
                 log=tmp_path / "a.log")
    gb = attack = None
    try:
        wait_for(lambda: (a / "gateway.sock").exists(), 30, "gateway a starts", [ga])
        gb = tinyssb(b, "run", "--connect", f"ws://127.0.0.1:{port}", "--name", "b",
                     log=tmp_path / "b.log")
        want_b = {f[0].fid: (len(f), 0) for f in feeds} | {key.fid: (1, 0)}
        wait_for(lambda: holdings(b) == want_b, 120, "b holds what a holds", [ga, gb])
        attack = subprocess.Popen(
            [sys.executable, "-m", "tests.hardening.ws_attack", f"ws://127.0.0.1:{port}",
             want.hex(), "--readers-off", "20", "--garbage", "40", "--seconds", str(ATTACK_S)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=Path(__file__).parents[2])
        t_end = time.monotonic() + ATTACK_S - 1
        time.sleep(2.0)  # let the attack build up
        latencies, published = [], 1
        while time.monotonic() < t_end:
            t0 = time.monotonic()
            answer = request(a, {"cmd": "status"}, timeout=10)
            latencies.append(time.monotonic() - t0)
            assert answer["ok"]
            t0 = time.monotonic()
            request(a, {"cmd": "publish", "content": "aG9uZXN0"}, timeout=10)
            latencies.append(time.monotonic() - t0)
            published += 1
            time.sleep(0.3)
        got = holdings(b).get(key.fid, (0, 0))[0]
        out, err = attack.communicate(timeout=30)
        assert attack.returncode == 0, err.decode()[-2000:]
        print(out.decode().strip(), f"status/publish latency max {max(latencies):.3f} s,"
              f" honest peer had {got} of {published} during the attack")
        # (measured on an idle 2-core box: well under 1 s; before the fix no answer came
        # within 10 s. The bound is loose: tests do not assert speed on a shared machine)
        assert max(latencies) < 5.0
        assert got >= published - 3  # entries kept arriving during the attack
        wait_for(lambda: holdings(b).get(key.fid) == (published, 0), 30,
                 "b gets the rest", [ga, gb])
        t0 = time.monotonic()
        assert stop(ga) == [0]
        assert time.monotonic() - t0 < 5.0
    finally:
        if attack is not None and attack.poll() is None:
            attack.kill()
            attack.wait()
        stop(*(p for p in (gb, ga) if p is not None))


def test_an_outbox_that_stays_full_reports_its_peer_once() -> None:
    import asyncio

    from gateway.transports.base import LinkCounters, Outbox

    async def scenario() -> list[float]:
        stalled: list[float] = []
        never = asyncio.Event()

        async def write(frame: bytes) -> None:
            await never.wait()  # a peer that takes nothing

        box = Outbox("peer", write, LinkCounters(), size=4, on_stall=stalled.append,
                     stall_after=0.05)
        for _ in range(6):
            box.put(b"x")
        await asyncio.sleep(0.08)
        for _ in range(3):
            box.put(b"x")
        await box.close()
        return stalled

    stalled = asyncio.run(scenario())
    assert len(stalled) == 1 and stalled[0] >= 0.05
