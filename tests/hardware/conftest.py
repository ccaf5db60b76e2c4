"""Make the firmware package and the portable test helpers importable as top-level modules."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for path in (HERE / "portable", ROOT / "hardware" / "firmware"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
