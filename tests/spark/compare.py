"""Comparing two reports of the same campaign, table by table."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq


def report_rows(report: Path, table: str) -> list[dict[str, Any]]:
    """A report table's rows in a fixed order."""
    rows = pq.read_table(report / "tables" / f"{table}.parquet").to_pylist()
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def same(a: Any, b: Any, *, rel_tol: float = 1e-9, strict_types: bool = False) -> bool:
    """Equal values, floats to ``rel_tol``; ``strict_types``: also of the same type."""
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=rel_tol, abs_tol=1e-12)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y, rel_tol=rel_tol, strict_types=strict_types)
                                        for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(
            same(a[k], b[k], rel_tol=rel_tol, strict_types=strict_types) for k in a)
    return (not strict_types or type(a) is type(b)) and bool(a == b)
