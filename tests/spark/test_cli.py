"""``tinyssb analyze`` and ``tinyssb capture convert`` as a person types them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.cli import main

from . import captures
from .conftest import Campaign


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_missing_input_is_one_line_and_exit_2(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(capsys, "analyze", str(tmp_path / "nope.cbor"), "--out",
                       str(tmp_path / "r"))
    assert rc == 2 and out == ""
    assert err == f"tinyssb: error: no such file or directory: {tmp_path / 'nope.cbor'}\n"
    assert not (tmp_path / "r").exists()


def test_unwritable_output_is_one_line_and_exit_2(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    src = captures.write_hand_ref(tmp_path / "hand-ref.cbor")
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    rc, _, err = run(capsys, "analyze", str(src), "--out", str(blocker / "report"))
    assert rc == 2
    assert err.startswith(f"tinyssb: error: cannot create output directory {blocker}/report")
    assert len(err.splitlines()) == 1


def test_bad_conf_is_an_argparse_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["analyze", "x.cbor", "--out", "r", "--conf", "spark.sql.shuffle.partitions"])
    assert exc.value.code == 2
    assert "expected KEY=VALUE" in capsys.readouterr().err


def test_help_names_master_conf_and_the_docs(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["analyze", "--help"])
    text = capsys.readouterr().out
    for word in ("--master", "--conf", "--out", "local[*]", "docs/spark.md"):
        assert word in text
    with pytest.raises(SystemExit):
        main(["capture", "convert", "--help"])
    assert "Parquet" in capsys.readouterr().out


def test_capture_convert_lists_runs_and_problems(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    captures.write_hand_ref(tmp_path / "hand-ref.cbor")
    torn, at = captures.write_torn(tmp_path / "cut.cbor")
    rc, out, err = run(capsys, "capture", "convert", str(tmp_path), "--out",
                       str(tmp_path / "ds"), "--quiet")
    assert rc == 0
    assert f"32 records of 2 runs in {tmp_path / 'ds'}" in out
    assert "  hand-ref: hand, policy reference, 1 file, 29 records" in out
    assert f"problem: {torn}: torn last record at byte {at}" in err
    rc, _, err = run(capsys, "capture", "convert", str(tmp_path / "ds"), "--out",
                     str(tmp_path / "ds2"))
    assert rc == 2 and "is converted already" in err
    rc, out, _ = run(capsys, "capture", "convert", str(tmp_path / "hand-ref.cbor"), "--out",
                     str(tmp_path / "one"), "--quiet")
    assert rc == 0 and f"29 records of 1 run in {tmp_path / 'one'}\n" in out


def test_capture_convert_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    captures.write_hand_ref(tmp_path / "hand-ref.cbor")
    torn, at = captures.write_torn(tmp_path / "cut.cbor")
    rc, out, _ = run(capsys, "capture", "convert", str(tmp_path), "--out",
                     str(tmp_path / "ds"), "--quiet", "--json")
    doc = json.loads(out)
    assert rc == 0 and doc["dataset"] == str(tmp_path / "ds") and doc["records"] == 32
    hand = next(r for r in doc["runs"] if r["id"] == "hand-ref")
    assert (hand["scenario"], hand["policy"], hand["records"], len(hand["files"])) == (
        "hand", "reference", 29, 1)
    (problem,) = doc["problems"]
    assert problem["file"] == str(torn) and problem["offset"] == at
    assert problem["text"].startswith(f"{torn}: torn last record at byte {at}")


def test_bad_master_url_is_named_in_one_line_and_nothing_is_created(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = captures.write_hand_ref(tmp_path / "hand-ref.cbor")
    rc, out, err = run(capsys, "analyze", str(src), "--out", str(tmp_path / "r"),
                       "--master", "bogus://x")
    assert rc == 2 and out == ""
    assert err.startswith("tinyssb: error: bad Spark master URL 'bogus://x': use local")
    assert len(err.splitlines()) == 1 and "Java" not in err
    assert not (tmp_path / "r").exists()


def test_ctrl_c_stops_spark_removes_the_output_and_exits_130(tmp_path: Path) -> None:
    """Ctrl-C in a terminal: SIGINT to the process group (the CLI and Spark's JVM)."""
    root = tmp_path / "caps"
    root.mkdir()
    captures.write_hand_ref(root / "hand-ref.cbor")
    captures.write_gateway_dir(root / "gw-site")
    out = tmp_path / "report"
    proc = subprocess.Popen(
        [sys.executable, "-m", "gateway.cli", "analyze", str(root), "--out", str(out),
         "--master", "local[1]", "--conf", "spark.ui.enabled=false"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stderr is not None
    seen = []
    try:
        for line in proc.stderr:
            seen.append(line)
            if line.startswith("analyze: pass 1/2"):  # a Spark job is running
                os.killpg(proc.pid, signal.SIGINT)
                break
        stdout, rest = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    lines = [*seen, *rest.splitlines(keepends=True)]
    assert proc.returncode == 130, "".join(lines)
    assert stdout == ""
    assert lines[-1] == "tinyssb: interrupted; analysis stopped, nothing written\n"
    # nothing from the JVM or py4j on the terminal: only our own progress lines
    assert all(line.startswith("analyze: ") for line in lines[:-1]), "".join(lines)
    assert not out.exists()


def test_analyze_json_is_one_document_and_one_run_is_singular(
        campaign: Campaign, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI side of ``analyze --json``: the Spark part is the campaign's real analysis
    (a second one would take ~10 s); the conversion of the input runs for real."""
    import spark.analyze
    from spark.report import Report

    def analyzed(request: spark.analyze.AnalyzeRequest, step: spark.analyze.Step
                 ) -> Report:
        spark.analyze.prepare_datasets(request, step)
        return Report(campaign.out, campaign.out / "index.html", campaign.summary, "text")

    monkeypatch.setattr(spark.analyze, "analyze", analyzed)
    src = captures.write_hand_ref(tmp_path / "hand-ref.cbor")
    rc, out, err = run(capsys, "analyze", str(src), "--out", str(tmp_path / "r"), "--json")
    assert rc == 0, err
    doc = json.loads(out)
    assert doc == {"out": str(campaign.out), "index": str(campaign.out / "index.html"),
                   "summary": json.loads((campaign.out / "summary.json").read_text())}
    assert doc["summary"]["format"] == "tinyssb-analysis" and len(doc["summary"]["runs"]) == 7
    assert "analyze: converted 29 records of 1 run in " in err and "1 runs" not in err
