"""A hostile WebSocket peer for tests (loopback only): ``python -m tests.hardening.ws_attack
URL WANT_HEX --readers-off N --garbage M --seconds S``.

N connections send WANT_HEX as fast as the gateway takes it and never read (their
receive queue fills, then TCP's); M connections send random garbage frames. Everything
stops after S seconds, and each connection sends at most ``--max-frames`` frames.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import time

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed


async def non_reader(url: str, frame: bytes, until: float, limit: int) -> int:
    sent = 0
    # max_queue=1: the client library stops reading the socket at once (TCP fills up)
    async with connect(url, compression=None, max_queue=1, ping_interval=None,
                       open_timeout=10) as conn:
        with contextlib.suppress(ConnectionClosed, TimeoutError):
            while time.monotonic() < until and sent < limit:
                async with asyncio.timeout(max(0.01, until - time.monotonic())):
                    await conn.send(frame)
                sent += 1
                if sent % 64 == 0:
                    await asyncio.sleep(0)
            while time.monotonic() < until:  # keep it open, never read
                await asyncio.sleep(0.2)
    return sent


async def garbage(url: str, until: float, limit: int) -> int:
    sent = 0
    with contextlib.suppress(ConnectionClosed, OSError, TimeoutError):
        async with connect(url, compression=None, open_timeout=10) as conn:
            while time.monotonic() < until and sent < limit:
                await conn.send(os.urandom(1 + sent % 120))
                sent += 1
                await asyncio.sleep(0.01)
    return sent


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("url")
    p.add_argument("want_hex")
    p.add_argument("--readers-off", type=int, default=20)
    p.add_argument("--garbage", type=int, default=50)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--max-frames", type=int, default=50000)
    args = p.parse_args()
    until = time.monotonic() + args.seconds
    frame = bytes.fromhex(args.want_hex)
    tasks = [non_reader(args.url, frame, until, args.max_frames)
             for _ in range(args.readers_off)]
    tasks += [garbage(args.url, until, args.max_frames) for _ in range(args.garbage)]
    results = await asyncio.gather(*tasks, return_exceptions=True)
    sent = sum(r for r in results if isinstance(r, int))
    print(f"sent {sent} frames over {len(tasks)} connections")


if __name__ == "__main__":
    asyncio.run(main())
