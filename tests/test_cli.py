"""The `tinyssb` command as a person uses it: output, exit codes, one-line errors."""

from __future__ import annotations

import base64
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from queue import Empty, Queue
from threading import Thread

import pytest

from gateway.cli import main
from gateway.store import DiskStore
from gateway.wire import bipf
from gateway.wire.ident import format_id, parse_id


def run(capsys: pytest.CaptureFixture[str], data: Path, *args: str) -> tuple[int, str, str]:
    rc = main(["--data", str(data), *args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_id_is_created_once_and_kept(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out1, _ = run(capsys, tmp_path / "d", "id")
    assert rc == 0
    fid = parse_id(out1.strip())
    assert out1.strip() == format_id(fid)
    rc, out2, _ = run(capsys, tmp_path / "d", "id", "--hex")
    assert rc == 0 and out2.strip() == fid.hex()
    key_file = tmp_path / "d" / "secret.json"
    assert key_file.stat().st_mode & 0o777 == 0o600


def test_publish_feeds_cat_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "d"
    assert run(capsys, data, "publish", "hello")[1].strip() == "1"
    long_file = tmp_path / "long.bin"
    long_file.write_bytes(bytes(range(256)) * 3)
    assert run(capsys, data, "publish", "--file", str(long_file))[1].strip() == "2"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"from stdin")))
    assert run(capsys, data, "publish", "--file", "-")[1].strip() == "3"

    rc, out, _ = run(capsys, data, "feeds", "--json")
    rows = json.loads(out)
    assert rc == 0 and len(rows) == 1
    assert rows[0]["length"] == 3 and rows[0]["own"] and rows[0]["missing_chunks"] == 0

    rc, out, _ = run(capsys, data, "cat", rows[0]["id"], "--seq", "1")
    assert rc == 0 and '"hello"' in out and '"TAV"' in out
    rc, out, _ = run(capsys, data, "cat", "me")
    assert "--- #1" in out and "--- #2 (768 B, 8 side-chain chunks)" in out and "text: from stdin" in out

    with DiskStore(data, readonly=True) as store:
        fid = store.feeds()[0]
        assert store.read_content(fid, 2) == bytes(range(256)) * 3
        post = bipf.decode(store.read_content(fid, 1))
        assert post[0] == "TAV" and post[2] == "hello"


def test_cat_raw_writes_exact_bytes(tmp_path: Path) -> None:
    data = tmp_path / "d"
    env = {**os.environ, "TINYSSB_DATA": str(data)}
    payload = bytes(range(256)) * 2
    subprocess.run([sys.executable, "-m", "gateway.cli", "publish", "-f", "-"], input=payload,
                   env=env, check=True, capture_output=True)
    out = subprocess.run([sys.executable, "-m", "gateway.cli", "cat", "me", "--seq", "1",
                          "--raw"], env=env, check=True, capture_output=True).stdout
    assert out == payload


@pytest.mark.parametrize("args, needle", [
    (["cat", "not-an-id"], "not a feed id"),
    (["cat", "00" * 32], "unknown feed"),
    (["cat", "@" + "A" * 43 + "=.ed25519"], "unknown feed"),
    (["cat", "me", "--seq", "9"], "has entries 1..1"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          args: list[str], needle: str) -> None:
    data = tmp_path / "d"
    run(capsys, data, "publish", "x")
    rc, _out, err = run(capsys, data, *args)
    assert rc == 2
    assert needle in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_key_file_readable_by_others_is_refused(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "d"
    run(capsys, data, "id")
    (data / "secret.json").chmod(0o644)
    rc, _, err = run(capsys, data, "publish", "x")
    assert rc == 2 and "chmod 600" in err and err.count("\n") == 1


def test_missing_data_dir_is_a_clear_error(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run(capsys, tmp_path / "nowhere", "feeds")
    assert rc == 2 and "does not exist" in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root bypasses file permissions")
def test_unreadable_data_dir_is_a_clear_error(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "d"
    run(capsys, data, "publish", "x")
    (data / "feeds").chmod(0)
    try:
        rc, _, err = run(capsys, data, "feeds")
    finally:
        (data / "feeds").chmod(0o700)
    assert rc == 2 and "permission" in err.lower()


def test_unreadable_data_dir_as_root_via_file_in_the_way(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A data dir path that is a file cannot be used; the error says which path."""
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    rc, _, err = run(capsys, blocker, "publish", "x")
    assert rc == 2 and str(blocker) in err and err.count("\n") == 1


def test_help_lists_the_commands() -> None:
    out = subprocess.run([sys.executable, "-m", "gateway.cli", "--help"], capture_output=True,
                         text=True, check=True).stdout
    for command in ("id", "publish", "feeds", "cat", "follow"):
        assert command in out


def test_follow_shows_entries_as_they_arrive(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "d"
    run(capsys, data, "publish", "first")
    env = {**os.environ, "TINYSSB_DATA": str(data), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "gateway.cli", "follow", "me",
                             "--interval", "0.05"], env=env, stdout=subprocess.PIPE, text=True)
    lines: list[str] = []
    queue: Queue[str] = Queue()
    assert proc.stdout is not None
    Thread(target=lambda: [queue.put(line) for line in proc.stdout], daemon=True).start()

    def next_line() -> str:
        try:  # a hang fails the test instead of stalling the suite
            return queue.get(timeout=30)
        except Empty:
            raise AssertionError(f"follow printed nothing new after: {lines}") from None

    try:
        lines.append(next_line())
        run(capsys, data, "publish", "second")  # written while follow is watching
        while "second" not in lines[-1]:
            lines.append(next_line())
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    text = "".join(lines)
    assert text.index("first") < text.index("--- #2") < text.index("second")


def test_publish_refuses_an_empty_stdin_unless_asked(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 18: from cron or ssh (stdin not a terminal, nothing piped) every run appended
    an empty entry."""
    data = tmp_path / "d"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    rc, out, err = run(capsys, data, "publish")
    assert rc == 2 and out == ""
    assert err == ("tinyssb: error: nothing to publish: stdin is empty; pass --allow-empty "
                   "to publish an empty entry anyway\n")
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    rc, _, err = run(capsys, data, "publish", "--file", str(empty))
    assert rc == 2 and f"{empty} is empty" in err
    rc, _, err = run(capsys, data, "publish", "")
    assert rc == 2 and "TEXT is empty" in err
    assert not (data / "secret.json").exists()  # nothing created for a refused publish
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    rc, out, _ = run(capsys, data, "publish", "--allow-empty")
    assert rc == 0 and out == "1\n"
    rc, out, _ = run(capsys, data, "cat", "me", "--seq", "1")
    assert rc == 0 and "--- #1 (0 B)" in out


def test_capture_pcap_writes_the_frames_for_wireshark(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gateway.capture import CaptureWriter, Direction, Record

    with CaptureWriter(tmp_path / "day.cbor.zst", "gw") as w:
        w.write(Record(1.5, "gw", Direction.TX, face="lora", frame=b"\x01" * 124))
        w.write(Record(2.25, "gw", Direction.RX, face="lora", frame=b"\x02" * 120))
        w.write(Record(3.0, "gw", Direction.STORE, feed=b"\x00" * 32, seq=1))
    rc, out, _ = run(capsys, tmp_path / "d", "capture", "pcap", str(tmp_path / "day.cbor.zst"),
                     "--json")
    assert rc == 0 and json.loads(out) == {
        "capture": str(tmp_path / "day.cbor.zst"), "pcap": str(tmp_path / "day.pcap"),
        "packets": 2, "torn": False}
    pcap = (tmp_path / "day.pcap").read_bytes()
    assert pcap[:4] == b"\xd4\xc3\xb2\xa1" and len(pcap) == 24 + 2 * 16 + 124 + 120
    rc, _, err = run(capsys, tmp_path / "d", "capture", "pcap", str(tmp_path / "none.cbor"))
    assert rc == 2 and err == f"tinyssb: error: no capture file {tmp_path / 'none.cbor'}\n"


def test_json_on_the_commands_that_print_data(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "d"
    rc, out, _ = run(capsys, data, "id", "--json")
    me = json.loads(out)
    assert rc == 0 and me["created"] is True and parse_id(me["id"]).hex() == me["hex"]
    rc, out, _ = run(capsys, data, "publish", "hi", "--json")
    assert rc == 0 and json.loads(out) == {"id": me["id"], "seq": 1,
                                           "bytes": json.loads(out)["bytes"],
                                           "via_gateway": False}
    rc, out, _ = run(capsys, data, "cat", "me", "--json")
    (entry,) = json.loads(out)
    assert (entry["seq"], entry["complete"], entry["chunks"]) == (1, True, 0)
    assert bipf.decode(base64.b64decode(entry["content_base64"]))[2] == "hi"
    rc, out, _ = run(capsys, data, "publish", "there", "--json")

    def stop(_: float) -> None:
        raise KeyboardInterrupt

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("gateway.cli.time.sleep", stop)
        rc, out, _ = run(capsys, data, "follow", "me", "--json")
    lines = [json.loads(line) for line in out.splitlines()]  # JSON lines
    assert rc == 0 and [e["seq"] for e in lines] == [1, 2]
    assert lines[0] == entry and lines[1]["text"].count("there") == 1
    rc, out, _ = run(capsys, data, "sim", "list", "--json")
    assert rc == 0 and {s["name"] for s in json.loads(out)} >= {"line-5", "city-100"}
    rc, out, _ = run(capsys, data, "sim", "run", "line-5", "--duration", "60",
                     "--no-capture", "--json")
    doc = json.loads(out)
    assert rc == 0 and doc["meta"]["scenario"] == "line-5" and doc["capture"] is None
    assert doc["nodes"] == 5 and "tx" in doc


def test_version_everywhere(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gateway import __version__
    from spark import main_job

    for command in ([], ["run"], ["status"], ["sim"], ["sim", "run"], ["analyze"],
                    ["capture", "convert"], ["dongle", "info"], ["isp", "serve"]):
        with pytest.raises(SystemExit) as exit_:
            main(["--data", str(tmp_path), *command, "--version"])
        assert exit_.value.code == 0
        assert capsys.readouterr().out == f"tinyssb {__version__}\n", command
    with pytest.raises(SystemExit):
        main_job.main(["--version"])
    assert capsys.readouterr().out == f"tinyssb {__version__}\n"
    flash = Path(__file__).resolve().parents[1] / "hardware" / "flash.py"
    out = subprocess.run([sys.executable, str(flash), "--version"], capture_output=True,
                         text=True, check=True).stdout
    assert out == f"flash.py (tinyssb) {__version__}\n"
