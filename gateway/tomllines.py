"""Where a key stands in a TOML text, so that a mistake can be reported by its line.

``tomllib`` gives values without positions; config files and simulator scenarios both
want errors like ``gateway.toml:3: websocket.listn: unknown key``. :class:`TomlLines`
indexes the table headers (``[t]`` and each ``[[t]]``, counted) and finds a key's line.
"""

from __future__ import annotations

import re

__all__ = ["TomlLines"]

_HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\-\"' ]+?)\s*\]\]?\s*(#.*)?$")


class TomlLines:
    """Where each table of a TOML text starts, to point at the line of a key."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self._sections: list[tuple[str, int | None, int, int]] = []  # name, index, from, to
        counts: dict[str, int] = {}
        current: tuple[str, int | None, int] = ("", None, 0)
        for no, raw in enumerate(self.lines):
            m = _HEADER.match(raw)
            if m is None:
                continue
            self._sections.append((*current, no))
            name = m.group(2).replace('"', "").replace("'", "").strip()
            index = None
            if m.group(1) == "[[":
                index = counts.get(name, 0)
                counts[name] = index + 1
            current = (name, index, no)
        self._sections.append((*current, len(self.lines)))

    def _range(self, table: str, index: int | None) -> tuple[int, int] | None:
        for name, idx, start, end in self._sections:
            if name == table and idx == index:
                return start, end
        return None

    def find(self, table: str, index: int | None, key: str) -> int | None:
        """1-based line of ``key = ...`` in the table (or of the table header)."""
        span = self._range(table, index)
        if span is None:
            return None
        start, end = span
        pattern = re.compile(rf"^\s*(\"{re.escape(key)}\"|'{re.escape(key)}'|{re.escape(key)})"
                             r"\s*=")
        for no in range(start, end):
            if pattern.match(self.lines[no]):
                return no + 1
        return start + 1 if table else None

    def find_text(self, table: str, index: int | None, needle: str) -> int | None:
        """1-based line of the first line in the table containing ``needle``."""
        span = self._range(table, index)
        if span is None:
            return None
        for no in range(*span):
            if needle in self.lines[no]:
                return no + 1
        return None
