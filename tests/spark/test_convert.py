"""CBOR captures to a Parquet dataset: runs, names, bad files, atomic output. No Spark."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from spark.analyze import AnalyzeRequest, InputError, find_inputs, prepare_datasets
from spark.convert import convert, plan_runs, read_headers, run_name
from spark.dataset import Dataset, DatasetError
from spark.stream import BadCapture, OffsetReader, read_header

from . import captures


def test_simulator_captures_are_runs_of_their_own_gateways_share_their_directory(
        tmp_path: Path) -> None:
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
    ref = captures.write_hand_ref(tmp_path / "a" / "x.cbor")
    other = captures.write_hand_def(tmp_path / "b" / "x.cbor")
    gw = captures.write_gateway_dir(tmp_path / "site 1")
    headers, problems = read_headers([ref, other, *gw])
    assert problems == []
    runs = plan_runs(headers)
    assert [r.id for r in runs] == ["x", "x-2", "site_1"]  # clash numbered, name made safe
    assert [len(r.files) for r in runs] == [1, 1, 2]
    assert (runs[0].scenario, runs[0].policy, runs[0].seed, runs[0].nodes) == (
        "hand", "reference", 1, ["A", "B", "C"])
    assert (runs[2].source, runs[2].scenario, runs[2].policy, runs[2].nodes) == (
        "gateway", "field", "unknown", [])
    assert run_name("../weird run!") == "weird_run"


def test_dataset_holds_every_record_with_file_and_offset(tmp_path: Path) -> None:
    src = captures.write_hand_ref(tmp_path / "hand-ref.cbor")
    ds = convert([src], tmp_path / "ds", show_progress=False)
    assert [r.id for r in ds.runs] == ["hand-ref"] and ds.problems == []
    rows = pq.read_table(tmp_path / "ds" / "records" / "run=hand-ref").to_pylist()
    records = captures.hand_ref_records()
    assert len(rows) == ds.records == len(records)
    offsets = [off for off, _ in OffsetReader(src)][1:]
    assert [r["offset"] for r in rows] == offsets
    assert {r["file"] for r in rows} == {"hand-ref.cbor"}
    assert [(r["t"], r["node"], r["dir"], r["frame"], r["kind"], r["feed"], r["seq"], r["cnr"],
             r["reason"], r["air"]) for r in rows] == [
        (x.t, x.node, x.dir.value, x.frame, x.kind, x.feed, x.seq, x.cnr, x.reason, x.air)
        for x in records]
    again = Dataset.load(tmp_path / "ds")
    assert again.runs[0].meta["scenario"] == "hand" and again.records == len(records)


def test_torn_capture_keeps_its_prefix_and_says_where(tmp_path: Path) -> None:
    torn, at = captures.write_torn(tmp_path / "cut.cbor")
    ds = convert([torn], tmp_path / "ds", show_progress=False)
    assert ds.records == 3 and ds.runs[0].files[0].torn_at == at
    (problem,) = ds.problems
    assert (problem.file, problem.offset) == (str(torn), at)
    assert str(problem) == (f"{torn}: torn last record at byte {at}; "
                            "kept the 3 records before it")


def test_corrupt_and_foreign_files_are_left_out_and_the_rest_converted(tmp_path: Path) -> None:
    corrupt, at = captures.write_corrupt(tmp_path / "broken.cbor")
    foreign = tmp_path / "notes.cbor"
    foreign.write_text("shopping list\n")
    good = captures.write_hand_def(tmp_path / "good.cbor")
    ds = convert([corrupt, foreign, good], tmp_path / "ds", show_progress=False)
    assert [r.id for r in ds.runs] == ["good"]
    where = {p.file: (p.offset, p.error, p.action) for p in ds.problems}
    assert where[str(corrupt)][0] == at and where[str(corrupt)][2] == "file left out"
    assert "not CBOR" in where[str(corrupt)][1]
    assert where[str(foreign)][0] == 0
    assert not (tmp_path / "ds" / "records" / "run=broken").exists()
    with pytest.raises(BadCapture) as exc:
        read_header(foreign)
    assert exc.value.offset == 0 and str(foreign) in str(exc.value)


def test_nothing_readable_is_an_error_and_leaves_nothing_behind(tmp_path: Path) -> None:
    foreign = tmp_path / "notes.cbor"
    foreign.write_bytes(b"\xff\xff")
    with pytest.raises(DatasetError, match="no readable capture"):
        convert([foreign], tmp_path / "ds", show_progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.cbor"]


def test_output_that_is_not_a_dataset_is_refused_a_dataset_is_replaced(tmp_path: Path) -> None:
    src = captures.write_hand_ref(tmp_path / "hand-ref.cbor")
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "thesis.tex").write_text("keep me")
    with pytest.raises(DatasetError, match="not a dataset"):
        convert([src], busy, show_progress=False)
    assert (busy / "thesis.tex").read_text() == "keep me"
    convert([src], tmp_path / "ds", show_progress=False)
    other = captures.write_hand_def(tmp_path / "hand-def.cbor")
    ds = convert([other], tmp_path / "ds", show_progress=False)
    assert [r.id for r in Dataset.load(tmp_path / "ds").runs] == [r.id for r in ds.runs] == [
        "hand-def"]
    assert not (tmp_path / "ds" / "records" / "run=hand-ref").exists()
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name or ".old-" in p.name]


def test_analyze_converts_once_and_reuses_an_unchanged_dataset(tmp_path: Path) -> None:
    (tmp_path / "caps").mkdir()
    src = captures.write_hand_ref(tmp_path / "caps" / "hand-ref.cbor")
    steps: list[str] = []
    request = AnalyzeRequest([str(tmp_path / "caps")], tmp_path / "out", show_progress=False)
    first = prepare_datasets(request, steps.append)
    assert any(s.startswith("converting 1 capture file") for s in steps)
    steps.clear()
    second = prepare_datasets(request, steps.append)
    assert any("unchanged" in s for s in steps)
    assert second[0].path == first[0].path == tmp_path / "out" / "dataset"
    captures.write_hand_def(src)  # same name, new content
    steps.clear()
    prepare_datasets(request, steps.append)
    assert any(s.startswith("converting") for s in steps)
    captures_found, datasets = find_inputs([str(tmp_path / "out" / "dataset")])
    assert captures_found == [] and datasets == [(tmp_path / "out" / "dataset").resolve()]


def test_inputs_that_do_not_exist_or_hold_no_capture_are_user_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        find_inputs([str(tmp_path / "missing.cbor")])
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no \\*.cbor capture"):
        find_inputs([str(tmp_path / "empty")])
