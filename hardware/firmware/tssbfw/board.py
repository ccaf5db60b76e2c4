"""Board configuration (``/board.json``, written at flash time) and radio construction.

The JSON is a copy of ``hardware/boards/<board>.json``: radio chip and pins, LED,
Vext power switch and PMU. ``make_radio`` and ``power_up`` take the ``machine`` module
as an argument so that tests can pass a fake one.
"""

import json

from tssbfw.sx1262 import SX1262
from tssbfw.sx1276 import SX1276

CONFIG_PATH = "/board.json"

AXP192_ADDR = 0x34
AXP192_POWER_OUTPUT = 0x12  # bit 2: LDO2 on
AXP192_LDO23_VOLTAGE = 0x28  # bits 7-4: LDO2 = 1.8 V + 0.1 V * n


def load(path: str = CONFIG_PATH) -> dict:
    with open(path) as f:
        return json.load(f)


def make_radio(cfg: dict, hal):
    radio = cfg["radio"]
    if radio["chip"] == "sx1262":
        return SX1262(hal, radio.get("tcxo_voltage"), radio.get("dio2_rf_switch", True))
    if radio["chip"] == "sx1276":
        return SX1276(hal)
    raise ValueError(f"unknown radio chip {radio['chip']}")


def power_up(cfg: dict, machine) -> None:
    """Switch on what powers the radio: Vext (Heltec) or the AXP192's LDO2 (T-Beam)."""
    vext = cfg.get("vext")
    if vext:
        machine.Pin(vext["pin"], machine.Pin.OUT, value=0 if vext["active_low"] else 1)
    pmu = cfg.get("pmu")
    if pmu and pmu["chip"] == "axp192":
        bus = pmu["i2c"]
        i2c = machine.I2C(bus["id"], sda=machine.Pin(bus["sda"]), scl=machine.Pin(bus["scl"]))
        addr = pmu.get("address", AXP192_ADDR)
        volt = i2c.readfrom_mem(addr, AXP192_LDO23_VOLTAGE, 1)[0]
        i2c.writeto_mem(addr, AXP192_LDO23_VOLTAGE, bytes(((volt & 0x0F) | 0xF0,)))  # 3.3 V
        out = i2c.readfrom_mem(addr, AXP192_POWER_OUTPUT, 1)[0]
        i2c.writeto_mem(addr, AXP192_POWER_OUTPUT, bytes((out | 0x04,)))


class Led:
    """The status LED: lit while the radio transmits, a short blink every 2 s otherwise."""

    def __init__(self, cfg: dict, machine) -> None:
        led = cfg.get("led")
        self._pin = machine.Pin(led["pin"], machine.Pin.OUT) if led else None
        self._active_low = bool(led and led["active_low"])

    def show(self, now_ms: int, transmitting: bool) -> None:
        if self._pin is None:
            return
        on = transmitting or now_ms % 2000 < 50
        self._pin.value((0 if on else 1) if self._active_low else (1 if on else 0))
