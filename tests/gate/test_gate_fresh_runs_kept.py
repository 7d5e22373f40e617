"""Fresh-process runs are kept where the user asked (issue 38, case 2): ``--aorta-runs N --benchmark-json PATH``
writes every run as one document at PATH itself (not at its basename in the working folder), with or
without a gate option."""

import json
from pathlib import Path

import pytest
from test_gate_plugin import run

from aorta.record.benchmark_json_option import target_path


def test_the_json_target_is_the_whole_path_given_never_its_basename(tmp_path):
    assert target_path(Path("out/all.json")) == Path("out/all.json")
    assert target_path("out/all.json") == Path("out/all.json")
    with open(tmp_path / "x.json", "wb") as f:  # pytest-benchmark < 5.3 without aorta's option fix: a file
        assert target_path(f) == tmp_path / "x.json"
    assert target_path(None) is None


@pytest.mark.slow  # two fresh pytest processes per case (about 20 s)
@pytest.mark.parametrize("gate", [(), ("--aorta-save-baseline", "base")], ids=["no_gate", "save"])
def test_the_runs_land_in_one_document_at_the_path_given(bench_dir, gate):
    (bench_dir.path / "out").mkdir()
    r = run(bench_dir, *gate, "--aorta-runs=2", "--aorta-confirm=0", "--benchmark-json", "out/all.json")
    assert r.ret == 0, r.stdout.str()
    doc = json.loads((bench_dir.path / "out" / "all.json").read_text())
    assert [e["id"] for e in doc["aorta_runs"]] == ["run1", "run2"]
    assert not (bench_dir.path / "all.json").exists()  # not its basename in the working folder
    r.stdout.fnmatch_lines(["aorta gate: the 2 runs as one document: out/all.json"])
