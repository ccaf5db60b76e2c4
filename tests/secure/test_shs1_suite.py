"""The SHS conformance suite shs1-test (npm) against our client and our server.

The suite (``shs1testclient`` / ``shs1testserver``) runs 45 handshakes per role, half of
them with a misbehaving peer (random messages, wrong network key, wrong box keys,
random signed plain text), and checks every byte we write plus the session keys we
derive. It drives ``shs1_adapter.py`` over stdin/stdout. The package is installed once
into ``.cache/shs1-test``; the test is skipped, with the reason, only when node/npm are
missing or the npm registry cannot be reached.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CACHE = ROOT / ".cache" / "shs1-test"
PACKAGE = "shs1-test"
VERSION = "1.1.1"
SUITE = CACHE / "node_modules" / PACKAGE


def _installed_version() -> str:
    meta = SUITE / "package.json"
    return str(json.loads(meta.read_text())["version"]) if meta.is_file() else ""


@pytest.fixture(scope="module")
def suite() -> Path:
    if _installed_version() == VERSION:
        return SUITE
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        pytest.skip("node/npm not installed: the shs1-test suite cannot run")
    CACHE.mkdir(parents=True, exist_ok=True)
    cmd = [npm, "install", "--prefix", str(CACHE), "--no-audit", "--no-fund", "--no-save",
           f"{PACKAGE}@{VERSION}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    if proc.returncode != 0 or _installed_version() != VERSION:
        pytest.skip(f"npm could not install {PACKAGE}@{VERSION} (registry unreachable?): "
                    f"{proc.stderr.strip()[-300:]}")
    return SUITE


def _adapter(tmp: Path, role: str) -> Path:
    """An executable the suite can spawn: our adapter in ``role``, this interpreter."""
    path = tmp / f"shs1-{role}"
    path.write_text(f"#!/bin/sh\nexec '{sys.executable}' '{HERE / 'shs1_adapter.py'}' "
                    f"{role} \"$@\"\n")
    path.chmod(0o755)
    return path


@pytest.mark.parametrize(("role", "driver"), [("server", "test-server.js"),
                                              ("client", "test-client.js")])
def test_shs1_suite_passes(suite: Path, tmp_path: Path, role: str, driver: str) -> None:
    proc = subprocess.run(["node", str(suite / driver), str(_adapter(tmp_path, role)),
                           "tinyssb"],
                          capture_output=True, text=True, timeout=240, check=False)
    assert proc.returncode == 0, f"shs1-test ({role}) failed:\n{proc.stdout[-3000:]}"
    assert f"Passed the {role} test suite" in proc.stdout
