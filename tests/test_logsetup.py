"""-v, -vv and -vvv do what docs/gateway.md says; lines carry a timestamp."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator

import pytest

from gateway.logsetup import ENTRIES, FRAMES, setup_logging


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    for name in (ENTRIES, FRAMES):
        logging.getLogger(name).setLevel(logging.NOTSET)


def shown(name: str, level: int = logging.INFO) -> bool:
    """Whether a record of ``name`` at ``level`` reaches stderr through our handler."""
    logger = logging.getLogger(name)
    if not logger.isEnabledFor(level):
        return False
    record = logger.makeRecord(name, level, __file__, 0, "x", (), None)
    (ours,) = [h for h in logging.getLogger().handlers if getattr(h, "tinyssb", False)]
    return bool(ours.filter(record))


@pytest.mark.parametrize("verbose, service, status, entries, frames, debug, ws_debug", [
    (0, False, False, False, False, False, False),
    (0, True, True, False, False, False, False),
    (1, True, True, True, False, False, False),
    (2, True, True, True, True, True, False),  # websockets' own debug lines stay out
    (3, True, True, True, True, True, True),
])
def test_each_v_adds_what_the_docs_say(verbose: int, service: bool, status: bool,
                                       entries: bool, frames: bool, debug: bool,
                                       ws_debug: bool) -> None:
    setup_logging(verbose, service=service)
    assert shown("tinyssb.gateway") is status
    assert shown(ENTRIES) is entries and shown(FRAMES) is frames
    assert shown("gateway.transports.websocket", logging.DEBUG) is debug
    assert shown("websockets.client", logging.DEBUG) is ws_debug
    assert shown("websockets.server", logging.WARNING)


def test_the_loggers_own_levels_stay_untouched() -> None:
    """Only our handler filters: a program embedding the gateway (or pytest's caplog)
    still gets the gateway's INFO records after a `tinyssb` command ran in-process."""
    setup_logging(0)
    assert logging.getLogger("gateway.isp").level == logging.NOTSET
    assert logging.getLogger("tinyssb.gateway").level == logging.NOTSET


def test_lines_start_with_a_timestamp(capsys: pytest.CaptureFixture[str]) -> None:
    setup_logging(0, service=True)
    logging.getLogger("tinyssb.gateway").info("status: 0 feeds")
    err = capsys.readouterr().err
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d INFO tinyssb.gateway: "
                        r"status: 0 feeds\n", err), err
