"""Flash MicroPython and the tinySSB dongle firmware onto an ESP32 LoRa board.

    python hardware/flash.py                       # list the boards
    python hardware/flash.py --board heltec_v3 --port /dev/ttyUSB0 \\
        --image ESP32_GENERIC_S3-20250911-v1.26.1.bin [--dry-run]

Steps: esptool erases the flash and writes the MicroPython image at the chip's offset
(ESP32 0x1000, ESP32-S3 0x0); mpremote copies the firmware package ``tssbfw``,
``boot.py``, ``main.py`` and the board's pin map as ``/board.json``, then resets the
board. ``--dry-run`` prints the commands instead of running them. ``make flash`` calls
this script after installing the ``flash`` extra (esptool, mpremote) into .venv.
Images: https://micropython.org/download/ESP32_GENERIC/ and
https://micropython.org/download/ESP32_GENERIC_S3/ (see hardware/README.md).
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BOARDS = HERE / "boards"
FIRMWARE = HERE / "firmware"
PACKAGE = "tssbfw"
NOT_FLASHED = {"simradio.py"}  # the simulator's radio stays on the host
BAUD = 460800
DOWNLOAD = "https://micropython.org/download/{image}/"


def boards() -> dict[str, dict[str, object]]:
    return {p.stem: json.loads(p.read_text()) for p in sorted(BOARDS.glob("*.json"))}


def package_files() -> list[Path]:
    return sorted(p for p in (FIRMWARE / PACKAGE).glob("*.py") if p.name not in NOT_FLASHED)


def commands(board: str, port: str, image: Path, python: str) -> list[list[str]]:
    """The esptool and mpremote command lines that flash ``board`` on ``port``."""
    cfg = boards()[board]
    chip, offset = str(cfg["mcu"]), str(cfg["flash_offset"])
    esptool = [python, "-m", "esptool", "--chip", chip, "--port", port, "--baud", str(BAUD)]
    mpremote = [python, "-m", "mpremote", "connect", port]
    copy = [*mpremote, "mkdir", f":{PACKAGE}", "+", "cp",
            *(str(p) for p in package_files()), f":{PACKAGE}/",
            "+", "cp", str(BOARDS / f"{board}.json"), ":board.json",
            "+", "cp", str(FIRMWARE / "boot.py"), ":boot.py",
            "+", "cp", str(FIRMWARE / "main.py"), ":main.py",
            "+", "reset"]
    return [
        [*esptool, "erase-flash"],
        [*esptool, "write-flash", offset, str(image)],
        copy,
    ]


def list_boards() -> str:
    lines = ["boards (make flash BOARD=<board> PORT=<serial port> MPY_IMAGE=<image .bin>):"]
    for name, cfg in boards().items():
        radio = cfg["radio"]
        chip = radio["chip"] if isinstance(radio, dict) else "?"
        lines.append(f"  {name:14} {cfg['name']} ({cfg['mcu']}, {chip}); "
                     f"image {DOWNLOAD.format(image=cfg['micropython_image'])}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--board", help="board id (omit to list the boards)")
    parser.add_argument("--port", help="serial port of the board, e.g. /dev/ttyUSB0")
    parser.add_argument("--image", type=Path, help="MicroPython firmware image (.bin)")
    parser.add_argument("--python", default=sys.executable,
                        help="interpreter with esptool and mpremote installed")
    parser.add_argument("--dry-run", action="store_true", help="print the commands only")
    args = parser.parse_args(argv)

    known = boards()
    if not args.board:
        print(list_boards())
        return 0
    if args.board not in known:
        print(f"unknown board {args.board!r}; known boards: {', '.join(known)}",
              file=sys.stderr)
        return 2
    if not args.port:
        print("give the serial port: PORT=/dev/ttyUSB0 (make) or --port", file=sys.stderr)
        return 2
    image_name = str(known[args.board]["micropython_image"])
    if args.image is None:
        print(f"give the MicroPython image: MPY_IMAGE=<file.bin> (make) or --image; "
              f"download it from {DOWNLOAD.format(image=image_name)}", file=sys.stderr)
        return 2
    if not args.dry_run and not args.image.is_file():
        print(f"MicroPython image {args.image} not found; download it from "
              f"{DOWNLOAD.format(image=image_name)}", file=sys.stderr)
        return 2
    for cmd in commands(args.board, args.port, args.image, args.python):
        print(shlex.join(cmd), flush=True)
        if args.dry_run:
            continue
        result = subprocess.run(cmd, check=False)
        if result.returncode != 0:
            print(f"failed (exit {result.returncode}): {shlex.join(cmd)}", file=sys.stderr)
            return result.returncode
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
