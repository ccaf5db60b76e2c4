"""SIGKILL a process that publishes into a DiskStore; the feed must survive every kill.

A child (``crash_child.py``) publishes deterministic entries of 0..600 bytes (so many have
side chains) and reports each sequence number once ``publish`` has returned. The parent
kills it at a random moment, reopens the data directory and checks that the feed is a
valid chain holding every reported entry with the right content, that nothing held
before is lost or changed, and that the next child continues right after the last entry.
"""

from __future__ import annotations

import logging
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from gateway.store import DiskStore
from gateway.wire.entry import FeedKey, genesis_prev, verify_entry

from .crash_child import SEED, expected_content

CHILD = Path(__file__).with_name("crash_child.py")
REPO = Path(__file__).resolve().parents[2]
KEY = FeedKey.from_seed(SEED)
ROUNDS = 60
EARLY_KILLS = 0.1  # share of rounds killed at a random moment after spawn (maybe mid-open)


def run_child(root: Path, rng: random.Random) -> tuple[int | None, list[int]]:
    """Start the child, kill it at a random moment; return (start seq, reported seqs)."""
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    # unbuffered: readline() must not read ahead, or lines it buffered would be lost to
    # communicate(), which reads the pipe's file descriptor directly
    proc = subprocess.Popen([sys.executable, str(CHILD), str(root)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, bufsize=0)
    first = b""
    try:
        if rng.random() < EARLY_KILLS:
            time.sleep(rng.uniform(0.0, 0.3))  # maybe during imports, maybe in recovery
        else:
            first = proc.stdout.readline()  # "start N": the store is open
            time.sleep(rng.uniform(0.0, 0.08))
        proc.send_signal(signal.SIGKILL)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if proc.returncode != -signal.SIGKILL:
        raise AssertionError(f"child exited by itself ({proc.returncode}): {err.decode()}")
    lines = (first + out).split(b"\n")[:-1]  # only complete lines
    start = None
    if lines and lines[0].startswith(b"start "):
        start = int(lines.pop(0).split()[1])
    return start, [int(x) for x in lines]


def test_sigkill_during_publish_loses_nothing_reported(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="gateway.store.disk")
    rng = random.Random(0x7155B)
    root = tmp_path / "data"
    fid = KEY.fid
    log_path = root / "feeds" / fid.hex() / "log"
    held = bytearray()  # the log as verified after the previous round
    length = 0
    prev = genesis_prev(fid)
    unreported_kept = 0  # rounds where an entry made durable but not reported survived
    for _ in range(ROUNDS):
        start, reported = run_child(root, rng)
        if start is not None:
            assert start == length + 1, "the child must continue right after the last entry"
        if reported:
            assert start is not None
            assert reported == list(range(start, start + len(reported)))

        store = DiskStore(root)
        try:
            if fid not in store:
                assert length == 0 and not reported
                continue
            info = store.info(fid)
            # nothing held before is lost or changed, every reported entry is there
            assert info.length >= length
            assert log_path.read_bytes()[: len(held)] == held
            if reported:
                assert info.length >= reported[-1]
            if info.length > (reported[-1] if reported else length):
                unreported_kept += 1
            # own entries are written with all of their chunks: no chain is incomplete
            assert info.missing_chunks == 0 and info.incomplete == ()
            for seq in range(length + 1, info.length + 1):
                packet = store.read_packet(fid, seq)
                prev = verify_entry(fid, seq, prev, packet).msg_id
                assert store.read_content(fid, seq) == expected_content(seq)
                held += packet
            # a sample of older entries still reads back
            for seq in rng.sample(range(1, info.length + 1), min(20, info.length)):
                assert store.read_content(fid, seq) == expected_content(seq)
            length = info.length
        finally:
            store.close()

    # the whole feed, once more from the start, read-only and writable
    for readonly in (True, False):
        store = DiskStore(root, readonly=readonly)
        try:
            assert store.info(fid).length == length
            p = genesis_prev(fid)
            for seq in range(1, length + 1):
                p = verify_entry(fid, seq, p, store.read_packet(fid, seq)).msg_id
                assert store.read_content(fid, seq) == expected_content(seq)
        finally:
            store.close()
    # the children did real work: many entries, most of them with a side chain
    assert length > ROUNDS
    orphans = sum("belongs to no entry" in r.getMessage() for r in caplog.records)
    print(f"\ncrash test: {ROUNDS} kills, {length} entries, "
          f"{unreported_kept} kills kept a durable but unreported entry, "
          f"{orphans} recoveries cut orphan chunks")
