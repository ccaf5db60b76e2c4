"""The SPI/pin object the radio drivers talk through, for real boards (MicroPython).

A HAL provides ``select(on)`` (NSS low while on), ``transfer(out) -> bytes`` (full
duplex while selected), ``busy()`` (SX126x BUSY high), ``irq()`` (DIO1 on SX126x, DIO0
on SX127x high), ``set_reset(level)``, ``sleep_ms(ms)``, ``ticks_ms()`` and
``elapsed_ms(start)``. Tests use a recording fake with the same methods.
"""

import time

from machine import SPI, Pin


class MachineHal:
    def __init__(self, radio_cfg: dict) -> None:
        spi = radio_cfg["spi"]
        self._spi = SPI(spi["id"], baudrate=spi.get("baudrate", 8000000), polarity=0,
                        phase=0, sck=Pin(spi["sck"]), mosi=Pin(spi["mosi"]),
                        miso=Pin(spi["miso"]))
        self._nss = Pin(radio_cfg["nss"], Pin.OUT, value=1)
        self._reset = Pin(radio_cfg["reset"], Pin.OUT, value=1)
        busy = radio_cfg.get("busy")
        self._busy = Pin(busy, Pin.IN) if busy is not None else None
        irq = radio_cfg["dio1"] if radio_cfg["chip"] == "sx1262" else radio_cfg["dio0"]
        self._irq = Pin(irq, Pin.IN)

    def select(self, on: bool) -> None:
        self._nss.value(0 if on else 1)

    def transfer(self, out: bytes) -> bytes:
        buf = bytearray(len(out))
        self._spi.write_readinto(out, buf)
        return bytes(buf)

    def busy(self) -> bool:
        return self._busy is not None and self._busy.value() == 1

    def irq(self) -> bool:
        return self._irq.value() == 1

    def set_reset(self, level: int) -> None:
        self._reset.value(level)

    def sleep_ms(self, ms: int) -> None:
        time.sleep_ms(ms)

    def ticks_ms(self) -> int:
        return time.ticks_ms()

    def elapsed_ms(self, start: int) -> int:
        return time.ticks_diff(time.ticks_ms(), start)


class Clock:
    """Milliseconds since boot that do not wrap (``time.ticks_ms`` wraps); call often."""

    def __init__(self) -> None:
        self._last = time.ticks_ms()
        self._ms = 0

    def ms(self) -> int:
        now = time.ticks_ms()
        self._ms += time.ticks_diff(now, self._last)
        self._last = now
        return self._ms
