"""`tinyssb run` processes over the secure link: two replicate; a gateway with the wrong
network key and one not on the allow-list are refused and get no frame (loopback only)."""

from __future__ import annotations

import io
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

from gateway.cli import main
from gateway.runtime.control import request
from gateway.store.keys import key_path, save_key
from gateway.wire.entry import FeedKey
from gateway.wire.ident import format_id

from .harness import build_feeds, free_port, holdings, populate, stop, tinyssb, wait_for

LIMIT = 120.0
NET = bytes(range(100, 132)).hex()


def identity(data: Path, tag: int) -> str:
    key = FeedKey.from_seed(bytes([tag]) * 32)
    save_key(key_path(data), key)
    return format_id(key.fid)


def refused(data: Path, *argv: str) -> str:
    """Run a gateway that must fail to start; its one-line error."""
    proc = subprocess.run([sys.executable, "-m", "gateway.cli", "--data", str(data), "run",
                           "--status-interval", "0", *argv],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("tinyssb: error:")]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return errors[0]


def test_secure_link_replicates_and_refuses_strangers(tmp_path: Path) -> None:
    a, b, c, d = (tmp_path / n for n in "abcd")
    feeds = build_feeds(8, 25)
    populate(a, feeds)
    id_a, id_b, id_c, id_d = (identity(p, t) for p, t in ((a, 0xA1), (b, 0xB1), (c, 0xC1),
                                                          (d, 0xD1)))
    port = free_port()
    ga = tinyssb(a, "run", "--secure-listen", f"127.0.0.1:{port}", "--secure-allow", id_b,
                 "--secure-allow", id_d, "--network-key", NET, "--name", "a",
                 "--status-interval", "0", log=tmp_path / "a.log")
    try:
        wait_for(lambda: (a / "gateway.sock").exists(), 30, "gateway a starts", [ga])
        gb = tinyssb(b, "run", "--secure-connect", f"127.0.0.1:{port}@{id_a}",
                     "--network-key", NET, "--name", "b", "--status-interval", "0",
                     log=tmp_path / "b.log")
        try:
            want = {f[0].fid: (len(f), 0) for f in feeds}
            wait_for(lambda: holdings(b) == want, LIMIT, "b replicates a's feeds", [ga, gb])
            st = request(b, {"cmd": "status"})
            [link] = st["links"]
            assert link["kind"] == "secure-connect"
            assert list(link["identities"].values()) == [id_a]
            shown = io.StringIO()
            with redirect_stdout(shown):
                assert main(["--data", str(a), "status"]) == 0
            assert id_b in shown.getvalue()  # a's status names who is connected

            # the wrong network key (d is on the allow-list): refused at the hello
            line = refused(d, "--secure-connect", f"127.0.0.1:{port}@{id_a}")
            assert "a different network key" in line
            # the right key, but c is not on a's allow-list
            line = refused(c, "--secure-connect", f"127.0.0.1:{port}@{id_a}",
                           "--network-key", NET)
            assert "not on its allow-list" in line
            assert holdings(c) == {} and holdings(d) == {}
            st = request(a, {"cmd": "status"})
            assert st["links"][0]["refused"] == 2 and len(st["faces"]) == 1
        finally:
            assert stop(gb) == [0]
    finally:
        assert stop(ga) == [0]
    log_a = (tmp_path / "a.log").read_text()
    refusals = [line for line in log_a.splitlines() if " refused 127.0.0.1:" in line]
    assert len(refusals) == 2, log_a
    assert "client hello failed authentication (wrong network key?)" in refusals[0]
    assert f"identity {id_c} is not on the allow-list" in refusals[1]
