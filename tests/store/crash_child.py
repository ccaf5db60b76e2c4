"""The child process of ``test_crash.py``: publish entries into a DiskStore until killed.

Run as ``python3 crash_child.py DATA_DIR``. It opens the store, writes ``start <seq>``
(the sequence number it is about to publish) and then, for every entry, publishes the
deterministic content of its sequence number and writes the number on a line of its own,
only after ``publish`` has returned (that is, after the entry is durable).
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

SEED = bytes(range(100, 132))
MAX_LEN = 600


def content_length(seq: int) -> int:
    """0..600 bytes: chunkless entries, one-chunk entries and chains of up to 6 chunks."""
    return (seq * 151 + seq // 7) % (MAX_LEN + 1)


def expected_content(seq: int) -> bytes:
    """The content the child publishes as entry ``seq``."""
    block = hashlib.sha256(b"crash-test %d" % seq).digest()
    n = content_length(seq)
    return (block * (n // len(block) + 1))[:n]


def main(data_dir: str) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from gateway.store import DiskStore
    from gateway.wire.entry import FeedKey

    key = FeedKey.from_seed(SEED)
    store = DiskStore(data_dir)
    seq = store.info(key.fid).length + 1 if key.fid in store else 1
    os.write(1, b"start %d\n" % seq)
    while True:
        entry = store.publish(key, expected_content(seq))
        if entry.seq != seq:
            os.write(2, b"publish returned seq %d, expected %d\n" % (entry.seq, seq))
            os._exit(3)
        os.write(1, b"%d\n" % seq)  # one write of a few bytes: never torn on a pipe
        seq += 1


if __name__ == "__main__":
    main(sys.argv[1])
