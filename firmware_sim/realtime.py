"""The mesh in real time, with one radio exposed as a simulated dongle on a pty.

:class:`DongleBridge` places a :class:`~firmware_sim.dongle.SimDongle` (the real dongle
firmware's command loop on a pseudo-terminal) at one position of the mesh. A gateway
process opens ``bridge.path`` as it would open ``/dev/ttyUSB0``, configures the radio and
from then on hears the simulated mesh and is heard by it: frames the dongle transmits
enter the channel at the dongle's position, frames the channel decodes there reach the
dongle's radio with their RSSI and SNR.

Virtual time then follows the wall clock: :meth:`DongleBridge.run` sleeps until the next
event is due, and a transmission from the dongle is put on the air at the wall-clock
instant it starts. This module is the only one of the simulator that reads a clock.
"""

from __future__ import annotations

import logging
import math
import queue
import threading
import time
from types import TracebackType
from typing import Self

from gateway.wire.lora import LoRaParams

from .dongle import SimDongle
from .engine import Simulation

__all__ = ["DongleBridge"]

log = logging.getLogger(__name__)

_IDLE_WAIT_S = 0.5  # longest sleep when nothing is scheduled


class DongleBridge:
    """One radio of ``sim`` (named ``name``, at x, y) is a SimDongle on a pty."""

    def __init__(self, sim: Simulation, name: str, x: float, y: float, params: LoRaParams,
                 *, board: str = "heltec_v3", duty_cycle: float = 0.01,
                 duty_window: float = 3600.0) -> None:
        self.sim = sim
        self.name = name
        self._air: queue.Queue[tuple[float, bytes]] = queue.Queue()
        self._t0 = time.monotonic()
        self.dongle = SimDongle(board=board, tx_fast=False, on_air=self._on_air)
        self.heard = 0  # frames the channel handed to the dongle's radio
        self.missed = 0  # of those, frames the radio was not listening for
        self.sent = 0  # frames the dongle put on the air
        sim.add_external(name, x, y, params, self._deliver, duty_cycle=duty_cycle,
                         duty_window=duty_window)

    @property
    def path(self) -> str:
        return self.dongle.path

    def start(self) -> Self:
        self.dongle.start()
        self._t0 = time.monotonic() - self.sim.now
        return self

    def stop(self) -> None:
        self.dongle.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def clock(self) -> float:
        """Virtual time now: seconds of wall clock since the mesh's time 0."""
        return time.monotonic() - self._t0

    def run(self, until: float = math.inf, stop: threading.Event | None = None) -> None:
        """Run the mesh in real time until virtual time ``until`` or until ``stop`` is set."""
        sim = self.sim
        while stop is None or not stop.is_set():
            due = sim.next_time()
            target = min(until, due if due is not None else math.inf)
            wait = min(target - self.clock(), _IDLE_WAIT_S)
            if wait > 0:
                try:
                    t, frame = self._air.get(timeout=wait)
                except queue.Empty:
                    continue
                self._transmit(t, frame)
                continue
            if target >= until and self.clock() >= until:
                sim.run(until)
                return
            sim.run(target)
            self._drain()

    def _drain(self) -> None:
        while True:
            try:
                t, frame = self._air.get_nowait()
            except queue.Empty:
                return
            self._transmit(t, frame)

    def _transmit(self, t: float, frame: bytes) -> None:
        sim = self.sim
        sim.run(max(t, sim.now))  # anything due before the dongle keyed up happens first
        self.sent += 1
        sim.external_transmit(self.name, frame)

    # --- the dongle's side (its pump thread) and the channel's side -------------------
    def _on_air(self, frame: bytes) -> None:
        self._air.put((self.clock(), bytes(frame)))

    def _deliver(self, frame: bytes, rssi: float, snr: float) -> None:
        self.heard += 1
        if not self.dongle.deliver(frame, round(rssi), round(snr * 4)):
            self.missed += 1
            log.debug("sim dongle %s was not listening: frame of %d B missed", self.name,
                      len(frame))
