"""What a link and the gateway runtime give each other.

A *link* is one configured transport: a WebSocket server or client, the UDP multicast
group, the serial dongle, the BLE central. It opens faces as peers appear (a WebSocket
server has one face per connected client; UDP and the dongle have one broadcast face)
and reports them to the runtime through :class:`LinkHost`. The runtime hands the Node's
outgoing frames to the face's ``send`` callable. Links move frames and never look inside
them: CRC trailers are added and checked by the Node, per face (``Face.crc``).

Life of a link: :meth:`Link.start` makes the first attempt (bind, connect, open) and
raises :class:`LinkError` with a one-line message a person can act on if that fails;
after a successful start the link keeps itself up, reconnecting with :class:`Backoff`
after faults, until :meth:`Link.close`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from ..replication.faces import Face

__all__ = [
    "Backoff",
    "Link",
    "LinkCounters",
    "LinkError",
    "LinkHost",
    "Outbox",
    "RadioMeta",
    "SendFn",
    "os_reason",
    "reconnect",
]

log = logging.getLogger(__name__)

_T = TypeVar("_T")


def os_reason(exc: BaseException) -> str:
    """A short lower-case reason for a socket error ("connection refused")."""
    if isinstance(exc, OSError):
        if exc.errno is not None and exc.errno > 0:
            text = os.strerror(exc.errno)
        else:  # resolver errors: negative errno, the message is in strerror
            text = exc.strerror or str(exc)
        return text[:1].lower() + text[1:]
    return str(exc) or type(exc).__name__


class LinkError(Exception):
    """A link could not start: one line naming what to fix (busy port, no such device)."""


@dataclass(frozen=True, slots=True)
class RadioMeta:
    """What a radio says about a received frame."""

    rssi: float | None = None  # dBm
    snr: float | None = None  # dB
    sender: str | None = None  # who sent it, when the link can tell (UDP: "ADDR:PORT")


SendFn = Callable[[bytes], bool]
"""Queue one frame on a face; False if it was dropped (queue full, face gone)."""


class LinkHost(Protocol):
    """The runtime, as a link sees it. All three are called from the event loop."""

    def face_up(self, face: Face, send: SendFn) -> None:
        """A face opened (a peer connected, the group joined, the dongle configured)."""

    def face_down(self, name: str, reason: str) -> None:
        """A face closed; its name may come back later with a new ``face_up``."""

    def frame_in(self, face: str, frame: bytes, meta: RadioMeta | None = None) -> None:
        """A frame arrived on a face, as it was on the link (CRC trailer included)."""


@dataclass(slots=True)
class LinkCounters:
    frames_in: int = 0
    frames_out: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    dropped_in: int = 0  # not frames: text messages, oversize datagrams, ...
    dropped_out: int = 0  # outbox full or face gone
    connects: int = 0
    faults: int = 0

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@dataclass(slots=True)
class Backoff:
    """Exponential backoff with jitter for reconnects: initial, doubling, capped."""

    initial: float = 0.5
    maximum: float = 30.0
    factor: float = 2.0
    jitter: float = 0.25  # +- share of the delay
    rng: random.Random = field(default_factory=random.Random)
    _next: float = 0.0

    def __post_init__(self) -> None:
        self._next = self.initial

    def reset(self) -> None:
        self._next = self.initial

    def delay(self) -> float:
        """The next delay to wait; each call doubles the following one."""
        d = self._next
        self._next = min(self.maximum, self._next * self.factor)
        return max(0.0, d * (1.0 + self.rng.uniform(-self.jitter, self.jitter)))

    async def wait(self) -> None:
        await asyncio.sleep(self.delay())


_DRAIN_BURST = 16  # frames an outbox writes before the other tasks get their turn


class Outbox:
    """A face's bounded outgoing queue, drained by one writer task.

    ``put`` never blocks (it is the face's :data:`SendFn`); when the queue is full the
    frame is dropped and counted: the Node re-sends what matters. ``write`` is the
    coroutine that puts one frame on the link; when it raises, the outbox stops and
    ``on_error`` is called with the exception (the link then closes the face).
    """

    def __init__(self, name: str, write: Callable[[bytes], Awaitable[None]],
                 counters: LinkCounters, *, size: int = 64,
                 on_error: Callable[[BaseException], None] | None = None,
                 on_stall: Callable[[float], None] | None = None,
                 stall_after: float = 5.0) -> None:
        self.name = name
        self._write = write
        self._counters = counters
        self._queue: asyncio.Queue[bytes] = asyncio.Queue(maxsize=size)
        self._on_error = on_error
        # a peer that keeps the outbox full (it never drains to half) for stall_after
        # seconds does not read: on_stall(seconds) is called once (the link drops it)
        self._on_stall = on_stall
        self._stall_after = stall_after
        self._full_since: float | None = None
        self._task: asyncio.Task[None] | None = asyncio.get_running_loop().create_task(
            self._drain(), name=f"outbox {name}")

    def put(self, frame: bytes) -> bool:
        if self._task is None:
            self._counters.dropped_out += 1
            return False
        try:
            self._queue.put_nowait(frame)
        except asyncio.QueueFull:
            self._counters.dropped_out += 1
            log.debug("%s: outbox full, frame dropped", self.name)
            self.check_stall()
            return False
        return True

    def check_stall(self) -> None:
        """Count time while full; past ``stall_after`` call ``on_stall`` (once)."""
        now = asyncio.get_running_loop().time()
        if self._full_since is None:
            self._full_since = now
        elif self._on_stall is not None and now - self._full_since >= self._stall_after:
            on_stall, self._on_stall = self._on_stall, None
            on_stall(now - self._full_since)

    def full(self) -> bool:
        """Is the outbox full (the peer takes less than we send)?"""
        return self._queue.full()

    def __len__(self) -> int:
        return self._queue.qsize()

    async def _drain(self) -> None:
        written = 0
        while True:
            if written % _DRAIN_BURST == 0:
                await asyncio.sleep(0)  # a write that never blocks must not hog the loop
            frame = await self._queue.get()
            written += 1
            try:
                await self._write(frame)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the link broke: it decides what next
                self._task = None
                if self._on_error is not None:
                    self._on_error(exc)
                return
            self._counters.frames_out += 1
            self._counters.bytes_out += len(frame)
            if self._full_since is not None and self._queue.qsize() <= self._queue.maxsize // 2:
                self._full_since = None  # it takes what it is sent again

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


class Link(ABC):
    """One configured transport. Subclasses set ``kind`` and implement the three methods."""

    kind: str = "link"

    def __init__(self, name: str) -> None:
        self.name = name
        self.counters = LinkCounters()

    @abstractmethod
    async def start(self, host: LinkHost) -> None:
        """First bind/connect/open; raises :class:`LinkError` (one line) on failure.

        Returns once the link is up. Background tasks it starts keep it up (reconnects
        with backoff) and report faces to ``host`` until :meth:`close`.
        """

    @abstractmethod
    async def close(self) -> None:
        """Stop reconnecting, close every face (``face_down``) and release the resource."""

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """Status for ``tinyssb status``: at least ``state`` and ``peers`` (face names),
        plus ``counters`` (:meth:`LinkCounters.as_dict`). JSON-serialisable."""


async def reconnect(name: str, target: str, backoff: Backoff, counters: LinkCounters,
                    connect: Callable[[], Awaitable[_T]], failed: type[Exception],
                    logger: logging.Logger) -> tuple[_T, int]:
    """Try ``connect`` after each ``backoff`` wait until it succeeds; the connection and
    the attempts it took. The first failure is a warning on ``logger``, later ones debug
    lines (a peer that stays down must not fill the log)."""
    attempts = 0
    while True:
        await backoff.wait()
        attempts += 1
        try:
            conn = await connect()
        except failed as exc:
            counters.faults += 1
            level = logging.WARNING if attempts == 1 else logging.DEBUG
            logger.log(level, "%s: reconnect to %s failed (%s); retrying", name, target, exc)
            continue
        backoff.reset()
        return conn, attempts
