"""GOSET spam against two real gateways (issue 14, case 2): 4,000 random keys named to
one and 3,000 to the other. Before, both GOSETs filled to 100 keys of different garbage,
for good (also across restarts). Now each face may name a few unproven keys only, they
age out after the probation, the two gateways agree again and a new feed crosses."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from gateway.runtime.control import request

from ..runtime.harness import build_feeds, free_port, holdings, populate, stop, tinyssb, wait_for

CONFIG = """[policy]
preset = "ip"
goset_probation = 6.0
goset_new_keys_per_face = 8
goset_new_keys_interval = 60.0
"""


def goset(data: Path) -> dict:
    return request(data, {"cmd": "status"}, timeout=10)["goset"]


def test_two_spammed_gateways_reconverge_and_a_new_feed_reaches_both(tmp_path: Path) -> None:
    feeds = build_feeds(5, 10, tag=77)
    a, b = tmp_path / "a", tmp_path / "b"
    populate(a, feeds)
    for d in (a, b):
        d.mkdir(exist_ok=True)
        (d / "gateway.toml").write_text(CONFIG)
    pa, pb = free_port(), free_port()
    ga = tinyssb(a, "run", "--ws-listen", f"127.0.0.1:{pa}", "--name", "a", log=tmp_path / "a.log")
    gb = None
    try:
        wait_for(lambda: (a / "gateway.sock").exists(), 30, "a starts", [ga])
        gb = tinyssb(b, "run", "--ws-listen", f"127.0.0.1:{pb}", "--connect",
                     f"ws://127.0.0.1:{pa}", "--name", "b", log=tmp_path / "b.log")
        want = {f[0].fid: (len(f), 0) for f in feeds}
        wait_for(lambda: holdings(b) == want, 60, "b replicates a", [ga, gb])
        spammers = [subprocess.run([sys.executable, "-m", "tests.hardening.goset_spam", url,
                                    str(n), str(seed)], cwd=Path(__file__).parents[2],
                                   capture_output=True, timeout=60, check=False)
                    for url, n, seed in ((f"ws://127.0.0.1:{pa}", 4000, 1),
                                         (f"ws://127.0.0.1:{pb}", 3000, 2))]
        assert [s.returncode for s in spammers] == [0, 0], spammers[0].stderr[-500:]
        during = (goset(a)["keys"], goset(b)["keys"])
        assert max(during) < 5 + 2 * 8 + 2  # (before: 100 and 100)
        wait_for(lambda: goset(a) == goset(b) and goset(a)["keys"] == 5, 60,
                 "a and b agree again", [ga, gb])
        assert len(list((b / "feeds").iterdir())) == 5  # empty spam feeds removed
        answer = request(a, {"cmd": "publish", "content": "bmV3IGZlZWQ="}, timeout=10)
        assert answer["ok"]
        own_a = next(fid for fid in holdings(a) if fid not in want)
        wait_for(lambda: holdings(b).get(own_a) == (1, 0), 60, "the new feed reaches b",
                 [ga, gb])
        print(f"GOSET keys during the spam: a {during[0]}, b {during[1]}; after: 5 and 5")
    finally:
        assert stop(*(p for p in (gb, ga) if p is not None)) == [0] * (1 + (gb is not None))
