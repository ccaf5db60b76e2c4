"""How ``tinyssb`` logs: timestamps, and what each ``-v`` adds.

======== ===================================================================================
level    shows
======== ===================================================================================
(none)   warnings; ``run`` and the other long-running commands also their status lines
``-v``   what happens: links, faces, feeds and one line per entry stored (``tinyssb.entries``)
``-vv``  one line per frame in and out with its kind (``tinyssb.frames``) and our debug lines
``-vvv`` also the libraries' own debug lines (websockets, bleak, asyncio, py4j)
======== ===================================================================================

The libraries stay at WARNING below ``-vvv``: their debug lines (every WebSocket frame)
drown what the gateway says.
"""

from __future__ import annotations

import logging

__all__ = ["ENTRIES", "FRAMES", "LIBRARIES", "setup_logging"]

ENTRIES = "tinyssb.entries"
FRAMES = "tinyssb.frames"
LIBRARIES = ("websockets", "bleak", "asyncio", "py4j", "urllib3", "matplotlib", "PIL")
OURS = ("tinyssb", "gateway", "firmware_sim", "spark")
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
DATEFMT = "%Y-%m-%d %H:%M:%S"


class _Levels(logging.Filter):
    """Which records our handler prints: by logger name, not by the loggers' own levels
    (those stay as they are, so an embedding program or pytest's caplog is not bent)."""

    def __init__(self, verbose: int, service: bool) -> None:
        super().__init__()
        self.ours = logging.DEBUG if verbose >= 2 else (
            logging.INFO if verbose == 1 or service else logging.WARNING)
        self.others = logging.DEBUG if verbose >= 3 else logging.WARNING

    def filter(self, record: logging.LogRecord) -> bool:
        top = record.name.partition(".")[0]
        return record.levelno >= (self.ours if top in OURS else self.others)


def setup_logging(verbose: int, *, service: bool = False) -> None:
    """Configure the root logger for ``-v`` x ``verbose``; ``service``: a long-running
    command whose INFO lines (status, links) are its output even without ``-v``."""
    root = logging.getLogger()
    for old in list(root.handlers):  # ours from an earlier call; others stay (pytest's)
        if getattr(old, "tinyssb", False):
            root.removeHandler(old)
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter(FORMAT, DATEFMT))
    handler.addFilter(_Levels(verbose, service))
    handler.tinyssb = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose >= 2 else (
        logging.INFO if verbose == 1 or service else logging.WARNING))
    # the per-entry and per-frame lines are not even formatted unless asked for
    logging.getLogger(ENTRIES).setLevel(logging.INFO if verbose >= 1 else logging.WARNING)
    logging.getLogger(FRAMES).setLevel(logging.INFO if verbose >= 2 else logging.WARNING)
