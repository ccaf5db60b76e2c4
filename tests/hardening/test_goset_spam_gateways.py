"""GOSET spam against two real gateways (issue 14, case 2): 4,000 random keys named to
one and 3,000 to the other. Before, both GOSETs filled to 100 keys of different garbage,
for good (also across restarts, the GOSET being rebuilt from the feed directories on
disk; an allow-list did not help, feeds on disk joined unfiltered). Now each face may name
a few unproven keys only, they age out after the probation (also those found on disk at
a restart), a key the allow-list does not name never joins, the two gateways agree again
and a new feed crosses."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.runtime.control import request
from gateway.store import DiskStore
from gateway.store.keys import load_or_create_key

from ..runtime.harness import build_feeds, free_port, holdings, populate, stop, tinyssb, wait_for

# the shortest probation that leaves time to see the spam before it ages out (the config
# takes any positive number; 0 means never)
CONFIG = """[policy]
preset = "ip"
goset_probation = 3.0
goset_new_keys_per_face = 8
goset_new_keys_interval = 60.0
"""


def goset(data: Path) -> dict:
    return request(data, {"cmd": "status"}, timeout=10)["goset"]


def spam(url: str, n: int, seed: int) -> None:
    """Name ``n`` random keys to the gateway at ``url`` (tests/hardening/goset_spam.py)."""
    done = subprocess.run([sys.executable, "-m", "tests.hardening.goset_spam", url, str(n),
                           str(seed)], cwd=Path(__file__).parents[2], capture_output=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-500:]


@pytest.mark.parametrize("allow_list", [False, True], ids=["replicate-all", "allow-list"])
def test_two_spammed_gateways_reconverge_and_a_new_feed_reaches_both(
        tmp_path: Path, allow_list: bool) -> None:
    feeds = build_feeds(5, 10, tag=77)
    a, b = tmp_path / "a", tmp_path / "b"
    populate(a, feeds)
    own_a = load_or_create_key(a)[0].fid  # the new honest feed, published after the spam
    config = CONFIG
    if allow_list:
        allowed = ", ".join(f'"{fid.hex()}"' for fid in [f[0].fid for f in feeds] + [own_a])
        config += f"allow = [{allowed}]\n"
    for d in (a, b):
        d.mkdir(exist_ok=True)
        (d / "gateway.toml").write_text(config)
    pa, pb = free_port(), free_port()
    ga = tinyssb(a, "run", "--ws-listen", f"127.0.0.1:{pa}", "--name", "a", log=tmp_path / "a.log")
    gb = None

    def start_b() -> subprocess.Popen[bytes]:
        return tinyssb(b, "run", "--ws-listen", f"127.0.0.1:{pb}", "--connect",
                       f"ws://127.0.0.1:{pa}", "--name", "b", log=tmp_path / "b.log")

    try:
        wait_for(lambda: (a / "gateway.sock").exists(), 30, "a starts", [ga])
        gb = start_b()
        want = {f[0].fid: (len(f), 0) for f in feeds}
        wait_for(lambda: holdings(b) == want, 60, "b replicates a", [ga, gb])
        honest = goset(a)
        spam(f"ws://127.0.0.1:{pa}", 4000, 1)
        spam(f"ws://127.0.0.1:{pb}", 3000, 2)
        during = (goset(a)["keys"], goset(b)["keys"])
        # restart b while what the spam left is still there
        assert stop(gb) == [0]
        on_disk = len(list((b / "feeds").iterdir()))
        if allow_list:
            # nothing named by the spam joined (before: 100 and 100) ...
            assert goset(a) == honest and during == (5, 5)
            # ... and keys on disk the allow-list does not name do not join either: what
            # a spammed run without the allow-list left behind
            rng = random.Random(3)
            with DiskStore(b) as store:
                for _ in range(30):
                    store.add_feed(rng.randbytes(32))
            on_disk = len(list((b / "feeds").iterdir()))
            assert on_disk == 5 + 30
        else:
            assert 5 < max(during) < 5 + 2 * 8 + 2  # (before: 100 and 100)
        gb = start_b()
        wait_for(lambda: (b / "gateway.sock").exists(), 30, "b restarts", [ga, gb])
        restarted = goset(b)["keys"]  # the feeds on disk, the unproven ones on probation
        wait_for(lambda: goset(a) == goset(b) == honest, 60, "a and b agree again", [ga, gb])
        if allow_list:
            assert restarted == 5
        else:
            assert restarted == on_disk > 5  # it survived the restart, then aged out
            assert len(list((b / "feeds").iterdir())) == 5  # empty spam feeds removed
        answer = request(a, {"cmd": "publish", "content": "bmV3IGZlZWQ="}, timeout=10)
        assert answer["ok"]
        wait_for(lambda: holdings(b).get(own_a) == (1, 0), 60, "the new feed reaches b",
                 [ga, gb])
        print(f"GOSET keys during the spam: a {during[0]}, b {during[1]}; b restarted with "
              f"{on_disk} feeds on disk, {restarted} GOSET keys; after: 5 and 5")
    finally:
        assert stop(*(p for p in (gb, ga) if p is not None)) == [0] * (1 + (gb is not None))
