"""Board pin maps, board setup with a fake ``machine`` module, and ``make flash``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tssbfw import board
from tssbfw.sx1262 import SX1262
from tssbfw.sx1276 import SX1276

ROOT = Path(__file__).resolve().parents[2]
BOARDS = sorted((ROOT / "hardware" / "boards").glob("*.json"))
FLASH = ROOT / "hardware" / "flash.py"


class FakePin:
    OUT, IN, PULL_UP = 1, 0, 2

    def __init__(self, machine: FakeMachine, pin: int, mode: int = 0, value: int | None = None,
                 *_: Any) -> None:
        self.machine, self.pin = machine, pin
        if value is not None:
            machine.levels[pin] = value

    def value(self, level: int | None = None) -> int:
        if level is not None:
            self.machine.levels[self.pin] = level
        return self.machine.levels.get(self.pin, 0)


class FakeI2C:
    def __init__(self, machine: FakeMachine, *_: Any, **__: Any) -> None:
        self.mem = machine.axp

    def readfrom_mem(self, addr: int, reg: int, n: int) -> bytes:
        return bytes(self.mem[(addr, reg + i)] for i in range(n))

    def writeto_mem(self, addr: int, reg: int, data: bytes) -> None:
        for i, b in enumerate(data):
            self.mem[(addr, reg + i)] = b


class FakeMachine:
    def __init__(self) -> None:
        self.levels: dict[int, int] = {}
        self.axp = {(0x34, 0x12): 0x01, (0x34, 0x28): 0x0A}
        machine = self

        class Pin(FakePin):
            def __init__(self, pin: int, *args: Any, **kw: Any) -> None:
                super().__init__(machine, pin, *args, **kw)

        self.Pin = Pin
        self.I2C = lambda *a, **k: FakeI2C(machine, *a, **k)


@pytest.mark.parametrize("path", BOARDS, ids=lambda p: p.stem)
def test_board_map(path: Path) -> None:
    cfg = json.loads(path.read_text())
    assert cfg["board"] == path.stem
    assert cfg["mcu"] in ("esp32", "esp32s3")
    assert cfg["flash_offset"] == ("0x0" if cfg["mcu"] == "esp32s3" else "0x1000")
    assert "RTS" in cfg["reset_wiring"] and "DTR" in cfg["reset_wiring"]
    radio = cfg["radio"]
    pins = [radio["nss"], radio["reset"], *radio["spi"].values()]
    if radio["chip"] == "sx1262":
        pins += [radio["busy"], radio["dio1"]]
        assert isinstance(board.make_radio(cfg, object()), SX1262)
    else:
        pins += [radio["dio0"]]
        assert isinstance(board.make_radio(cfg, object()), SX1276)
    gpio = pins[:2] + pins[3:]  # without the SPI bus id
    assert len(set(gpio)) == len(gpio), "a pin is used twice"


def test_power_up_heltec_vext_and_tbeam_axp192_ldo2() -> None:
    """Heltec: Vext low (active-low switch). T-Beam: AXP192 REG28H LDO2 = 3.3 V, REG12H bit 2."""
    m = FakeMachine()
    board.power_up(json.loads((ROOT / "hardware/boards/heltec_v3.json").read_text()), m)
    assert m.levels[36] == 0
    m = FakeMachine()
    board.power_up(json.loads((ROOT / "hardware/boards/tbeam_sx1276.json").read_text()), m)
    assert m.axp[(0x34, 0x28)] == 0xFA
    assert m.axp[(0x34, 0x12)] == 0x05


def test_led_active_low() -> None:
    m = FakeMachine()
    led = board.Led(json.loads((ROOT / "hardware/boards/tbeam_sx1262.json").read_text()), m)
    led.show(500, transmitting=True)
    assert m.levels[4] == 0
    led.show(500, transmitting=False)
    assert m.levels[4] == 1


def test_flash_lists_boards_without_board() -> None:
    out = subprocess.run([sys.executable, str(FLASH)], capture_output=True, text=True,
                         check=True).stdout
    for path in BOARDS:
        assert path.stem in out
    assert "micropython.org/download/ESP32_GENERIC_S3/" in out


@pytest.mark.parametrize("path", BOARDS, ids=lambda p: p.stem)
def test_make_flash_dry_run(path: Path) -> None:
    if shutil.which("make") is None:
        pytest.skip("make not installed")
    cfg = json.loads(path.read_text())
    proc = subprocess.run(
        ["make", "-s", "--no-print-directory", "flash", "DRY_RUN=1", f"BOARD={path.stem}",
         "PORT=/dev/ttyUSB7", "MPY_IMAGE=/tmp/mp.bin"],
        cwd=ROOT, capture_output=True, text=True, check=True)
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 3
    erase, write, copy = lines
    chip = f"--chip {cfg['mcu']} --port /dev/ttyUSB7"
    assert "-m esptool" in erase and chip in erase and erase.endswith("erase-flash")
    assert chip in write and write.endswith(f"write-flash {cfg['flash_offset']} /tmp/mp.bin")
    assert "-m mpremote connect /dev/ttyUSB7 mkdir :tssbfw" in copy
    assert f"boards/{path.stem}.json :board.json" in copy
    assert "tssbfw/dongle.py" in copy and "simradio.py" not in copy
    assert copy.endswith("main.py :main.py + reset")


def test_flash_refuses_missing_image() -> None:
    proc = subprocess.run([sys.executable, str(FLASH), "--board", "heltec_v2", "--port", "/x"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert "ESP32_GENERIC/" in proc.stderr
