"""Run a Gateway in-process for a test: bounded waits, clean shutdown."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TypeVar

from gateway.runtime.config import GatewayConfig
from gateway.runtime.gateway import Gateway
from gateway.transports.base import Link

T = TypeVar("T")
WAIT = 30.0  # bound on real I/O


def run(coro: Callable[[], Awaitable[T]], limit: float = 90.0) -> T:
    async def bounded() -> T:
        async with asyncio.timeout(limit):
            return await coro()
    return asyncio.run(bounded())


async def until(check: Callable[[], bool], limit: float = WAIT, step: float = 0.01) -> None:
    async with asyncio.timeout(limit):
        while not check():
            await asyncio.sleep(step)


@contextlib.asynccontextmanager
async def running(data: Path, links: list[Link], **cfg: object) -> AsyncIterator[Gateway]:
    config = GatewayConfig(**cfg)  # type: ignore[arg-type]
    gw = Gateway(data, config, links)
    await gw.open()
    task = asyncio.get_running_loop().create_task(gw.serve())
    try:
        yield gw
    finally:
        gw.stop()
        await task
        await gw.close()
