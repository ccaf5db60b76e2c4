"""The reference conformance vectors, copied from shared/vectors (see its README)."""

import json
from pathlib import Path

PATH = Path(__file__).with_name("tinyssb-reference-vectors.json")


def load() -> dict:
    return json.loads(PATH.read_text())
