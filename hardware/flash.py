"""Flash MicroPython and the tinySSB dongle firmware onto an ESP32 LoRa board.

    python hardware/flash.py                       # list the boards
    python hardware/flash.py --board heltec_v3 --port /dev/ttyUSB0 [--dry-run]
    python hardware/flash.py --board heltec_v3 --port /dev/ttyUSB0 \\
        --image ESP32_GENERIC_S3-20251209-v1.27.0.bin

Steps: without ``--image``, the MicroPython release pinned in the board file
(``micropython.url`` and ``micropython.sha256``) is downloaded into the cache
(``.cache/micropython/``), its SHA-256 checked against the pinned one, and reused from
the cache next time; a board file without a pinned checksum is refused (pass
``--image``). Then esptool erases the flash and writes the image at the chip's offset
(ESP32 0x1000, ESP32-S3 0x0); mpremote copies the firmware package ``tssbfw``,
``boot.py``, ``main.py`` and the board's pin map as ``/board.json``, then resets the
board. ``--dry-run`` prints what it would download and run, and does neither.
``make flash`` calls this script after installing the ``flash`` extra (esptool,
mpremote) into .venv. See hardware/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shlex
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BOARDS = HERE / "boards"
FIRMWARE = HERE / "firmware"
CACHE = ROOT / ".cache" / "micropython"
PACKAGE = "tssbfw"
NOT_FLASHED = {"simradio.py"}  # the simulator's radio stays on the host
BAUD = 460800
DOWNLOAD = "https://micropython.org/download/{image}/"
TIMEOUT = 60.0  # seconds without data before a download is given up
BLOCK = 1 << 16
EXIT_USER_ERROR = 2

Say = Callable[[str], None]


class FlashError(Exception):
    """A mistake or failure the user can fix: one line, exit code 2."""


@dataclass(frozen=True, slots=True)
class Pin:
    """The MicroPython release a board file pins: where to fetch it and its checksum."""

    board: str
    version: str
    url: str
    sha256: str | None

    @property
    def filename(self) -> str:
        return Path(urlsplit(self.url).path).name


def version() -> str:
    """The project's version, from pyproject.toml (this script runs without the package)."""
    try:
        import tomllib

        with open(ROOT / "pyproject.toml", "rb") as f:
            return str(tomllib.load(f)["project"]["version"])
    except (ImportError, OSError, KeyError, ValueError):
        return "unknown"


def boards(where: Path = BOARDS) -> dict[str, dict[str, object]]:
    return {p.stem: json.loads(p.read_text()) for p in sorted(where.glob("*.json"))}


def package_files() -> list[Path]:
    return sorted(p for p in (FIRMWARE / PACKAGE).glob("*.py") if p.name not in NOT_FLASHED)


def pinned(board: str, cfg: dict[str, object]) -> Pin:
    """The board file's ``micropython`` entry; FlashError if it has no URL."""
    entry = cfg.get("micropython")
    if not isinstance(entry, dict) or not entry.get("url"):
        raise FlashError(f"no pinned MicroPython release for {board}; pass MPY_IMAGE=... "
                         f"or add micropython.url and sha256 to hardware/boards/{board}.json")
    sha = entry.get("sha256")
    if sha is not None and not (isinstance(sha, str) and len(sha) == 64
                                and all(c in "0123456789abcdefABCDEF" for c in sha)):
        raise FlashError(f"hardware/boards/{board}.json: micropython.sha256 is not 64 hex "
                         f"digits: {sha!r}")
    return Pin(board, str(entry.get("version", "?")), str(entry["url"]),
               sha.lower() if isinstance(sha, str) else None)


def no_checksum(pin: Pin) -> str:
    return (f"no pinned checksum for {pin.board}; pass MPY_IMAGE=... or add sha256 to "
            f"hardware/boards/{pin.board}.json")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(BLOCK):
            digest.update(block)
    return digest.hexdigest()


def fetch(pin: Pin, cache: Path, say: Say) -> Path:
    """The pinned image, from the cache when its checksum matches, else downloaded into it.

    The download goes to a temporary file in ``cache`` that is renamed into place only
    once its SHA-256 equals the pinned one; on a mismatch, a network error or Ctrl-C it
    is removed, so the cache never holds a partial or unverified image.
    """
    if pin.sha256 is None:
        raise FlashError(no_checksum(pin))
    target = cache / pin.filename
    if target.is_file():
        if sha256_of(target) == pin.sha256:
            say(f"using cached {target} (sha256 verified)")
            return target
        say(f"cached {target} does not match the pinned sha256; downloading it again")
    cache.mkdir(parents=True, exist_ok=True)
    say(f"downloading MicroPython {pin.version} for {pin.board}: {pin.url}")
    fd, name = tempfile.mkstemp(dir=cache, prefix=f".{pin.filename}.", suffix=".part")
    part = Path(name)
    try:
        digest = hashlib.sha256()
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(pin.url, timeout=TIMEOUT) as r:
            while block := r.read(BLOCK):
                digest.update(block)
                out.write(block)
        got = digest.hexdigest()
        if got != pin.sha256:
            raise FlashError(f"checksum mismatch for {pin.url}: sha256 {got}, pinned "
                             f"{pin.sha256} in hardware/boards/{pin.board}.json; "
                             "nothing kept")
        os.replace(part, target)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise FlashError(f"download of {pin.url} failed: {reason}") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            part.unlink()
    say(f"verified sha256 {pin.sha256}; cached as {target}")
    return target


def commands(board: str, port: str, image: Path, python: str,
             boards_dir: Path = BOARDS) -> list[list[str]]:
    """The esptool and mpremote command lines that flash ``board`` on ``port``."""
    cfg = boards(boards_dir)[board]
    chip, offset = str(cfg["mcu"]), str(cfg["flash_offset"])
    esptool = [python, "-m", "esptool", "--chip", chip, "--port", port, "--baud", str(BAUD)]
    mpremote = [python, "-m", "mpremote", "connect", port]
    copy = [*mpremote, "mkdir", f":{PACKAGE}", "+", "cp",
            *(str(p) for p in package_files()), f":{PACKAGE}/",
            "+", "cp", str(boards_dir / f"{board}.json"), ":board.json",
            "+", "cp", str(FIRMWARE / "boot.py"), ":boot.py",
            "+", "cp", str(FIRMWARE / "main.py"), ":main.py",
            "+", "reset"]
    return [
        [*esptool, "erase-flash"],
        [*esptool, "write-flash", offset, str(image)],
        copy,
    ]


def list_boards(boards_dir: Path = BOARDS) -> str:
    lines = ["boards (make flash BOARD=<board> PORT=<serial port> [MPY_IMAGE=<image .bin>]):"]
    for name, cfg in boards(boards_dir).items():
        radio = cfg["radio"]
        chip = radio["chip"] if isinstance(radio, dict) else "?"
        entry = cfg.get("micropython")
        if not isinstance(entry, dict):
            pin = "no pinned release"
        elif entry.get("sha256"):
            pin = f"MicroPython {entry.get('version')}"
        else:
            pin = f"MicroPython {entry.get('version')} (no pinned sha256: give MPY_IMAGE)"
        lines.append(f"  {name:14} {cfg['name']} ({cfg['mcu']}, {chip}); {pin}; "
                     f"images {DOWNLOAD.format(image=cfg['micropython_image'])}")
    return "\n".join(lines)


def _say(text: str) -> None:
    print(text, flush=True)


def run(args: argparse.Namespace) -> int:
    known = boards(args.boards)
    if not args.board:
        print(list_boards(args.boards))
        return 0
    if args.board not in known:
        raise FlashError(f"unknown board {args.board!r}; known boards: {', '.join(known)}")
    if not args.port:
        raise FlashError("give the serial port: PORT=/dev/ttyUSB0 (make) or --port")
    cfg = known[args.board]
    image: Path
    if args.image is not None:
        image = args.image
        if not args.dry_run and not image.is_file():
            raise FlashError(f"MicroPython image {image} not found; leave MPY_IMAGE out to "
                             f"download the pinned release, or get one from "
                             f"{DOWNLOAD.format(image=cfg['micropython_image'])}")
    else:
        pin = pinned(args.board, cfg)
        if args.dry_run:
            image = args.cache / pin.filename
            check = f"sha256 {pin.sha256}" if pin.sha256 else "no pinned sha256"
            state = "cached" if image.is_file() else "not cached"
            print(f"# download {pin.url} -> {image} ({check}; {state})", flush=True)
            if pin.sha256 is None:
                print(f"flash.py: note: {no_checksum(pin)}; a real run refuses",
                      file=sys.stderr)
        else:
            image = fetch(pin, args.cache, _say)
    for cmd in commands(args.board, args.port, image, args.python, args.boards):
        print(shlex.join(cmd), flush=True)
        if args.dry_run:
            continue
        result = subprocess.run(cmd, check=False)
        if result.returncode != 0:
            print(f"failed (exit {result.returncode}): {shlex.join(cmd)}", file=sys.stderr)
            return result.returncode
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="flash.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=f"flash.py (tinyssb) {version()}")
    parser.add_argument("--board", help="board id (omit to list the boards)")
    parser.add_argument("--port", help="serial port of the board, e.g. /dev/ttyUSB0")
    parser.add_argument("--image", type=Path,
                        help="MicroPython firmware image (.bin); default: the release pinned "
                             "in the board file, downloaded and checked")
    parser.add_argument("--python", default=sys.executable,
                        help="interpreter with esptool and mpremote installed")
    parser.add_argument("--cache", type=Path, default=CACHE, metavar="DIR",
                        help="where downloaded images are kept (default .cache/micropython)")
    parser.add_argument("--boards", type=Path, default=BOARDS, metavar="DIR",
                        help="directory of board files (default hardware/boards)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print what would be downloaded and run, do neither")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except FlashError as exc:
        print(f"flash.py: error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("flash.py: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
