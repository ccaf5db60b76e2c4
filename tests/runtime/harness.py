"""Run a Gateway in-process for a test: bounded waits, clean shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import TypeVar

from gateway.runtime.config import GatewayConfig
from gateway.runtime.gateway import Gateway
from gateway.store import DiskStore
from gateway.transports.base import Link
from gateway.wire.entry import Entry, FeedKey, build_feed

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


# --- whole gateway processes -------------------------------------------------------------

def build_feeds(n_feeds: int, n_entries: int, tag: int = 7) -> list[list[Entry]]:
    """``n_feeds`` feeds of ``n_entries``; every fourth entry has a 3-chunk side chain."""
    feeds = []
    for f in range(n_feeds):
        key = FeedKey.from_seed(bytes([tag]) + f.to_bytes(31, "big"))
        contents = [(b"feed %d entry %d " % (f, s)) * (14 if s % 4 == 0 else 1)
                    for s in range(1, n_entries + 1)]
        feeds.append(build_feed(key, contents))
    return feeds


def populate(root: Path, feeds: list[list[Entry]]) -> None:
    """Put ``feeds`` into the data directory ``root`` as if they had been replicated."""
    with DiskStore(root) as store:
        for feed in feeds:
            store.add_feed(feed[0].fid)
            for entry in feed:
                store.ingest_entry(entry.fid, entry.packet)
                for chunk in entry.chunks:
                    store.ingest_chunk(chunk)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tinyssb(data: Path, *argv: str, log: Path | None = None) -> subprocess.Popen[bytes]:
    """Start ``tinyssb --data DATA ARGV...`` as its own process (stderr to ``log``)."""
    err = open(log, "ab") if log is not None else subprocess.DEVNULL  # noqa: SIM115
    try:
        proc = subprocess.Popen([sys.executable, "-m", "gateway.cli", "--data", str(data),
                                 *argv], stdout=subprocess.DEVNULL, stderr=err)
        proc.log_path = log  # type: ignore[attr-defined]  # read by wait_for on an exit
        return proc
    finally:
        if log is not None:
            err.close()  # type: ignore[union-attr]


def holdings(data: Path) -> dict[bytes, tuple[int, int]]:
    """fid -> (entries, chunks missing), read from the data directory (read-only)."""
    if not (data / "feeds").exists():
        return {}
    with DiskStore(data, readonly=True) as store:
        return {fid: (store.replica(fid).max_seq, store.replica(fid).missing_chunks())
                for fid in store.feeds()}


def wait_for(check: Callable[[], bool], limit: float, what: str,
             procs: Sequence[subprocess.Popen[bytes]] = ()) -> float:
    """Poll ``check`` (real time, bounded) while the processes live; seconds taken."""
    t0 = time.monotonic()
    while not check():
        for p in procs:
            if p.poll() is not None:
                raise AssertionError(f"{what}: a gateway exited with {p.returncode}"
                                     f"{_log_tail(p)}")
        if time.monotonic() - t0 > limit:
            raise AssertionError(f"{what}: not within {limit:g} s")
        time.sleep(0.1)
    return time.monotonic() - t0


def stop(*procs: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> list[int]:
    for p in procs:
        if p.poll() is None:
            p.send_signal(sig)
    return [p.wait(timeout=30) for p in procs]


def _log_tail(proc: subprocess.Popen[bytes], lines: int = 15) -> str:
    """The last lines of what a gateway started by :func:`tinyssb` wrote to its log (a
    failed run's tmp_path is gone by the time anyone looks)."""
    log = getattr(proc, "log_path", None)
    if log is None or not Path(log).exists():
        return ""
    tail = Path(log).read_text(errors="replace").splitlines()[-lines:]
    return "; its log ends:\n" + "\n".join(tail)
