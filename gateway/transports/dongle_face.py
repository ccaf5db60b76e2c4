"""The LoRa dongle as a gateway link: one broadcast face over :class:`DongleLink`.

The dongle checks and strips the CRC32 trailer of received frames and adds it to the
frames it sends, so the face has ``crc=False``; it has the radio's LoRa parameters and a
duty-cycle budget, which the Node keeps within. Received frames carry RSSI and SNR.

The face stays up while the dongle is unplugged: :class:`DongleLink` reconnects by itself
and holds frames handed to it until the dongle is back, so nothing the Node sent in
the meantime is lost on the host (frames beyond the outbox are dropped and counted; the
Node repeats what matters).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import fields
from typing import Any

from ..replication.faces import Face
from ..wire.lora import LoRaParams
from ..wire.lora import profile as lora_profile
from .base import Link, LinkError, LinkHost, Outbox, RadioMeta
from .dongle_proto import DutyLimit, Received
from .serial_dongle import DongleLink, DongleLinkError, LinkClosed

__all__ = ["SerialDongle"]

log = logging.getLogger(__name__)


class SerialDongle(Link):
    """A LoRa dongle on ``port`` configured with the radio plan ``profile``."""

    kind = "serial"

    def __init__(self, port: str, profile: str, *, duty_cycle: float = 0.01,
                 board: str | None = None, name: str = "lora", outbox_size: int = 8,
                 detect_timeout: float = 3.0, backoff: tuple[float, float] = (0.2, 5.0),
                 params: LoRaParams | None = None) -> None:
        super().__init__(name)
        self.port = port
        self.profile = profile
        self.params = params if params is not None else lora_profile(profile)
        self.face = Face.dongle(name, self.params, duty_cycle=duty_cycle)
        duty = DutyLimit(round(duty_cycle * 1000), 3_600_000) if duty_cycle else None
        self.link = DongleLink(port, radio=self.params, duty=duty, board=board,
                               detect_timeout=detect_timeout, backoff=backoff)
        self._outbox_size = outbox_size
        self._outbox: Outbox | None = None
        self._reader: asyncio.Task[None] | None = None
        self._host: LinkHost | None = None

    async def start(self, host: LinkHost) -> None:
        try:
            await self.link.open()
        except DongleLinkError as exc:
            raise LinkError(str(exc)) from None
        self._host = host
        self.counters.connects += 1
        self._outbox = Outbox(self.name, self.link.send, self.counters, size=self._outbox_size,
                              on_error=self._on_send_error)
        host.face_up(self.face, self._outbox.put)
        self._reader = asyncio.get_running_loop().create_task(self._read(),
                                                              name=f"dongle {self.port}")

    def _on_send_error(self, exc: BaseException) -> None:
        if not isinstance(exc, LinkClosed):
            log.warning("dongle %s: send failed: %s", self.port, exc)
            self.counters.faults += 1

    async def _read(self) -> None:
        assert self._host is not None
        async for rx in self.link:
            self._deliver(rx)
        log.info("dongle %s: link closed", self.port)

    def _deliver(self, rx: Received) -> None:
        assert self._host is not None
        self.counters.frames_in += 1
        self.counters.bytes_in += len(rx.packet)
        self._host.frame_in(self.face.name, rx.packet, RadioMeta(
            float(rx.rssi) if rx.rssi is not None else None, rx.snr))

    async def close(self) -> None:
        if self._outbox is not None:
            await self._outbox.close()
        await self.link.close()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
            self._reader = None
        if self._host is not None:
            self._host.face_down(self.face.name, "closed")
            self._host = None

    def describe(self) -> dict[str, Any]:
        ident = self.link.identity
        return {
            "state": "up" if self.link.connected else "reconnecting",
            "peers": [self.face.name],
            "port": self.port,
            "profile": self.profile,
            "tx_power_dbm": self.params.tx_power_dbm,
            "dongle": f"{ident.board} fw {ident.firmware}" if ident else None,
            "credit": self.link.credit,
            "counters": self.counters.as_dict(),
            "link": {f.name: getattr(self.link.counters, f.name)
                     for f in fields(self.link.counters)
                     if isinstance(getattr(self.link.counters, f.name), int)},
        }
