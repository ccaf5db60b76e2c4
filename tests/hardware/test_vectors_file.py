"""protocol-vectors.json is current, well-formed, and agrees with PROTOCOL.md's examples."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VECTORS = ROOT / "hardware" / "vectors" / "protocol-vectors.json"
PROTOCOL = ROOT / "hardware" / "PROTOCOL.md"


def _generator():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(VECTORS.parent))
    try:
        import make_vectors
    finally:
        sys.path.remove(str(VECTORS.parent))
    return make_vectors


def test_file_is_up_to_date() -> None:
    assert VECTORS.read_text() == _generator().render(), (
        "run: python hardware/vectors/make_vectors.py")


def test_schema() -> None:
    data = json.loads(VECTORS.read_text())
    assert {"doc", "frames", "sessions"} <= set(data)
    names = [f["name"] for f in data["frames"]]
    assert len(names) == len(set(names))
    for f in data["frames"]:
        assert f["direction"] in ("host_to_dongle", "dongle_to_host")
        raw = bytes.fromhex(f["kiss_hex"])
        assert raw[0] == raw[-1] == 0xC0
        assert isinstance(f["meaning"]["command"], str)
    keys = {"host", "dongle", "air_tx", "air_tx_done", "air_rx", "clock_ms"}
    for s in data["sessions"]:
        for step in s["steps"]:
            assert len(set(step) & keys) == 1, step


def test_every_command_has_a_vector() -> None:
    data = json.loads(VECTORS.read_text())
    cmds = {f["cmd"] for f in data["frames"]}
    documented = {int(c, 16) for c in re.findall(r"^\| `([0-9A-F]{2})` \|", PROTOCOL.read_text(),
                                                   re.MULTILINE)}
    assert documented and documented <= cmds


def test_protocol_md_examples_are_in_the_vectors() -> None:
    """Every complete `C0 ... C0` line of PROTOCOL.md (except those with <...> stand-ins such as <packet>) is a vector."""
    data = json.loads(VECTORS.read_text())
    wire = {f["kiss_hex"] for f in data["frames"]}
    for s in data["sessions"]:
        wire |= {step.get("host", "") for step in s["steps"]}
        wire |= {step.get("dongle", "") for step in s["steps"]}
    examples = re.findall(r"(C0(?: [0-9A-F]{2})+ C0)", PROTOCOL.read_text())
    assert len(examples) >= 10
    for ex in examples:
        assert ex.replace(" ", "").lower() in wire, ex
