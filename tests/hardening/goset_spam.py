"""GOSET spam for tests (loopback only): ``python -m tests.hardening.goset_spam URL N SEED``
connects to one gateway and names N random keys (novelties and claims), then leaves."""

from __future__ import annotations

import asyncio
import random
import sys

from websockets.asyncio.client import connect

from gateway.wire.goset import Claim, Novelty


async def main(url: str, n: int, seed: int) -> None:
    rng = random.Random(seed)
    async with connect(url, compression=None, open_timeout=10) as conn:
        for i in range(n):
            key = rng.randbytes(32)
            if i % 2:
                await conn.send(Novelty(key).encode())
            else:
                lo, hi = sorted((key, rng.randbytes(32)))
                await conn.send(Claim(lo, hi, rng.randbytes(32), 5).encode())
            if i % 100 == 0:
                await asyncio.sleep(0.01)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
