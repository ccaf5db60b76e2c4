"""The portable firmware tests (tests/hardware/portable) again, under real MicroPython.

MicroPython 1.27 (the WebAssembly port, npm package
``@micropython/micropython-webassembly-pyscript``) runs on Node.js. The package is
installed once into ``.cache/micropython-wasm``; the tests are skipped, with the reason,
only when node/npm are missing or the npm registry cannot be reached.
"""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PORTABLE = HERE / "portable"
CACHE = ROOT / ".cache" / "micropython-wasm"
PACKAGE = "@micropython/micropython-webassembly-pyscript"
VERSION = "1.27.0"
MP_MODULE = CACHE / "node_modules" / PACKAGE / "micropython.mjs"


def _portable_tests() -> list[str]:
    names = []
    for path in sorted(PORTABLE.glob("test_*.py")):
        module = importlib.import_module(path.stem)
        names += [f"{path.stem}::{n}" for n in sorted(dir(module)) if n.startswith("test_")]
    return names


def _install() -> None:
    if MP_MODULE.is_file() and _installed_version() == VERSION:
        return
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        pytest.skip("node/npm not installed: MicroPython (WebAssembly) cannot run")
    CACHE.mkdir(parents=True, exist_ok=True)
    cmd = [npm, "install", "--prefix", str(CACHE), "--no-audit", "--no-fund", "--no-save",
           f"{PACKAGE}@{VERSION}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    if proc.returncode != 0 or not MP_MODULE.is_file():
        pytest.skip(f"npm could not install {PACKAGE}@{VERSION} (registry unreachable?): "
                    f"{proc.stderr.strip()[-300:]}")


def _installed_version() -> str:
    meta = MP_MODULE.parent / "package.json"
    return str(json.loads(meta.read_text())["version"]) if meta.is_file() else ""


@pytest.fixture(scope="session")
def mp_results() -> dict[str, Any]:
    _install()
    proc = subprocess.run(
        ["node", str(HERE / "mp_runner.mjs"), str(MP_MODULE), str(ROOT / "hardware" / "firmware"),
         str(PORTABLE), str(ROOT / "hardware" / "vectors" / "protocol-vectors.json")],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode == 0, f"MicroPython runner failed:\n{proc.stderr}\n{proc.stdout}"
    line = proc.stdout.strip().splitlines()[-1]
    assert line.startswith("MPRESULTS "), proc.stdout
    return {f"{m}::{f}": (status, detail)
            for m, f, status, detail in json.loads(line[len("MPRESULTS "):])}


def test_micropython_is_the_real_interpreter(mp_results: dict[str, Any]) -> None:
    assert "<runtime>::micropython 1.27.0" in mp_results
    errors = {k: v for k, v in mp_results.items() if k.endswith("::<import>")}
    assert not errors, f"portable modules failed to import under MicroPython: {errors}"
    assert set(_portable_tests()) <= set(mp_results)


@pytest.mark.parametrize("name", _portable_tests())
def test_portable_under_micropython(name: str, mp_results: dict[str, Any]) -> None:
    status, detail = mp_results[name]
    assert status == "pass", f"{name} failed under MicroPython:\n{detail}"
