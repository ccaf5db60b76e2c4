"""Board pin maps, board setup with a fake ``machine`` module, and ``make flash``."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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
    pin = cfg["micropython"]
    assert pin["url"] == (f"https://micropython.org/resources/firmware/"
                          f"{cfg['micropython_image']}-20251209-v{pin['version']}.bin")
    assert pin["sha256"] is None or len(bytes.fromhex(pin["sha256"])) == 32


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


def test_flash_refuses_a_board_without_a_pinned_checksum(tmp_path: Path) -> None:
    """The shipped board files pin the URL but no sha256 (none published to copy from)."""
    proc = subprocess.run([sys.executable, str(FLASH), "--board", "heltec_v2", "--port", "/x",
                           "--cache", str(tmp_path / "cache")],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == ("flash.py: error: no pinned checksum for heltec_v2; pass "
                           "MPY_IMAGE=... or add sha256 to hardware/boards/heltec_v2.json\n")
    assert not (tmp_path / "cache").exists()


def test_make_flash_dry_run_without_image() -> None:
    if shutil.which("make") is None:
        pytest.skip("make not installed")
    proc = subprocess.run(
        ["make", "-s", "--no-print-directory", "flash", "DRY_RUN=1", "BOARD=heltec_v3",
         "PORT=/dev/ttyUSB7"], cwd=ROOT, capture_output=True, text=True, check=True)
    download, erase, write, copy = proc.stdout.strip().splitlines()
    url = "https://micropython.org/resources/firmware/ESP32_GENERIC_S3-20251209-v1.27.0.bin"
    cached = ROOT / ".cache" / "micropython" / Path(url).name
    assert download.startswith(f"# download {url} -> {cached} (no pinned sha256;")
    assert erase.endswith("erase-flash") and write.endswith(f"write-flash 0x0 {cached}")
    assert copy.endswith("main.py :main.py + reset")
    assert "no pinned checksum for heltec_v3" in proc.stderr


class Served:
    """A firmware image served over HTTP on 127.0.0.1, counting the requests."""

    def __init__(self) -> None:
        self.body = b"\xe9" + bytes(range(256)) * 64
        self.requests = 0
        served = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                served.requests += 1
                if not self.path.endswith(".bin"):
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(served.body)))
                self.end_headers()
                self.wfile.write(served.body)

            def log_message(self, *_: Any) -> None:
                """No access line per request on the test's stderr."""

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/firmware/"


@pytest.fixture
def served() -> Iterator[Served]:
    s = Served()
    thread = threading.Thread(target=s.server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield s
    finally:
        s.server.shutdown()
        s.server.server_close()
        thread.join()


def pin_board(tmp_path: Path, url: str, sha256: str | None) -> Path:
    """A boards directory holding heltec_v3 pinned to ``url`` and ``sha256``."""
    boards = tmp_path / "boards"
    boards.mkdir()
    cfg = json.loads((ROOT / "hardware/boards/heltec_v3.json").read_text())
    cfg["micropython"] = {"version": "1.27.0", "url": url, "sha256": sha256}
    (boards / "heltec_v3.json").write_text(json.dumps(cfg))
    return boards


def flash(boards: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    """flash.py without an image; esptool and mpremote replaced by `true`."""
    true = shutil.which("true")
    if true is None:
        pytest.skip("no `true` command")
    return subprocess.run([sys.executable, str(FLASH), "--boards", str(boards), "--board",
                           "heltec_v3", "--port", "/dev/ttyFAKE", "--cache", str(cache),
                           "--python", true], capture_output=True, text=True, check=False)


def test_flash_downloads_verifies_caches_and_reuses(tmp_path: Path, served: Served) -> None:
    url = served.url + "ESP32_GENERIC_S3-20251209-v1.27.0.bin"
    boards = pin_board(tmp_path, url, hashlib.sha256(served.body).hexdigest().upper())
    cache = tmp_path / "cache"
    first = flash(boards, cache)
    assert first.returncode == 0, first.stderr
    image = cache / "ESP32_GENERIC_S3-20251209-v1.27.0.bin"
    assert image.read_bytes() == served.body and [p.name for p in cache.iterdir()] == [image.name]
    assert f"downloading MicroPython 1.27.0 for heltec_v3: {url}" in first.stdout
    assert f"write-flash 0x0 {image}" in first.stdout
    assert served.requests == 1
    again = flash(boards, cache)
    assert again.returncode == 0 and served.requests == 1  # from the cache
    assert f"using cached {image} (sha256 verified)" in again.stdout
    image.write_bytes(b"damaged")
    assert flash(boards, cache).returncode == 0 and served.requests == 2
    assert image.read_bytes() == served.body


@pytest.mark.parametrize("case", ["mismatch", "not found"])
def test_flash_download_refused_leaves_nothing(tmp_path: Path, served: Served,
                                               case: str) -> None:
    name = "ESP32_GENERIC_S3-x.bin" if case == "mismatch" else "missing.txt"
    boards = pin_board(tmp_path, served.url + name, hashlib.sha256(b"other").hexdigest())
    cache = tmp_path / "cache"
    proc = flash(boards, cache)
    assert proc.returncode == 2 and served.requests == 1
    (line,) = proc.stderr.splitlines()
    if case == "mismatch":
        assert line.startswith(f"flash.py: error: checksum mismatch for {served.url}{name}: "
                               f"sha256 {hashlib.sha256(served.body).hexdigest()}, pinned ")
        assert line.endswith("; nothing kept")
    else:
        assert line == f"flash.py: error: download of {served.url}{name} failed: Not Found"
    assert list(cache.iterdir()) == []  # no partial file
    assert "erase-flash" not in proc.stdout


def test_flash_version() -> None:
    proc = subprocess.run([sys.executable, str(FLASH), "--version"], capture_output=True,
                          text=True, check=True)
    assert proc.stdout.startswith("flash.py (tinyssb) 0.")
