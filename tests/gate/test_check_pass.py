"""A check run that passed is not repeated (aorta.gate.session.check_pass): the same command and code find the
record and start with a lean run, whose stack, machine and code are compared with the record's; any change runs
the check run at once; a damaged record only costs a check run."""

import json
from pathlib import Path

import pytest

from aorta.gate.runs.blocks import RUN_KEY
from aorta.gate.runs.fresh_runs import ChildRun
from aorta.gate.session import check_pass
from aorta.gate.session.auto_runs import run_auto
from aorta.gate.stats.sequential import Budget


def run_doc(code="c0de", torch_version="2.11.0", gpu_uuid="GPU-1", sample=False, kind="full"):
    return {
        "machine_info": {
            "python_version": "3.12.3",
            "aorta": {"backend": "cuda", "torch": torch_version, "gpu_uuid": gpu_uuid, "env": {}},
        },
        RUN_KEY: {"seed": 0, "kind": kind, "selection": "s", "sample": sample, "start": "fork", "code": code},
    }


def passed(**kw):
    p = check_pass.passed_from_run("key1", run_doc(**kw), 61.0, 20.0, "/runs/check.log")
    assert p is not None
    return p


def test_a_record_vouches_for_a_lean_run_of_the_same_code_stack_and_machine():
    assert check_pass.verify(passed(), run_doc(kind="lean", sample=True)) is None


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"code": "beef"}, "the code differs"),
        ({"torch_version": "2.12.0"}, "the stack differs (torch)"),
        ({"gpu_uuid": "GPU-2"}, "another machine (GPU-2"),
    ],
)
def test_any_change_of_code_stack_or_machine_is_named(change, words):
    why = check_pass.verify(passed(), run_doc(kind="lean", sample=True, **change))
    assert why is not None and words in why


def test_a_run_without_json_is_not_vouched_for():
    assert "no JSON" in (check_pass.verify(passed(), None) or "")


def test_a_check_run_that_was_a_sample_or_names_no_code_leaves_no_record():
    assert check_pass.passed_from_run("k", run_doc(sample=True), 1.0, None, "") is None
    assert check_pass.passed_from_run("k", run_doc(code=""), 1.0, None, "") is None


def test_records_are_found_by_command_and_code_newest_first_and_kept_bounded(tmp_path):
    for i in range(check_pass.KEEP + 5):
        check_pass.store(tmp_path, check_pass.Passed(f"k{i}", "c", {}, "m", "t", 1.0, None, ""))
    records = check_pass.load(tmp_path)
    assert len(records) == check_pass.KEEP and records[0]["key"] == f"k{check_pass.KEEP + 4}"
    assert check_pass.find(records, f"k{check_pass.KEEP + 4}", "c") is not None
    assert check_pass.find(records, f"k{check_pass.KEEP + 4}", "other code") is None
    assert check_pass.find(records, "k0", "c") is None  # the oldest fell out
    check_pass.store(tmp_path, check_pass.Passed("k9", "c", {}, "m", "t2", 2.0, None, ""))
    again = check_pass.load(tmp_path)
    assert [r["passed_at"] for r in again if r["key"] == "k9"] == ["t2"]  # replaced, not doubled


@pytest.mark.parametrize("text", ["", "{", "[]", '{"passed": 3}', '{"passed": [1, "x"]}'])
def test_a_damaged_record_file_is_no_record(tmp_path, text):
    (tmp_path / check_pass.FILE_NAME).write_text(text)
    assert check_pass.load(tmp_path) == []


def test_the_command_key_is_the_arguments_and_the_interpreter():
    k = check_pass.command_key(["benchmarks/hw_queue", "-m", "p0"], "/usr/bin/python3")
    assert k == check_pass.command_key(["benchmarks/hw_queue", "-m", "p0"], "/usr/bin/python3")
    assert k != check_pass.command_key(["benchmarks/hw_queue", "-m", "p1"], "/usr/bin/python3")
    assert k != check_pass.command_key(["benchmarks/hw_queue", "-m", "p0"], "/venv/bin/python3")


def test_the_code_hash_moves_with_any_file_the_run_reads(tmp_path):
    pkg, tests = tmp_path / "aorta", tmp_path / "benchmarks" / "hw"
    pkg.mkdir()
    tests.mkdir(parents=True)
    (pkg / "mod.py").write_text("x = 1\n")
    (tests / "test_a.py").write_text("def test(): pass\n")
    (tests / "conftest.py").write_text("# c\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")

    def h():
        files = check_pass.code_files(pkg, [tests / "test_a.py"], tmp_path, tmp_path / "pytest.ini")
        return check_pass.code_hash(files, tmp_path)

    first = h()
    for f in (pkg / "mod.py", tests / "test_a.py", tests / "conftest.py", tmp_path / "pytest.ini"):
        before = f.read_text()
        f.write_text(before + "# changed\n")
        assert h() != first, f
        f.write_text(before)
        assert h() == first


class Runs:
    """Fake runs: each writes a document; ``lean_doc`` is what the lean runs record of their code and stack."""

    def __init__(self, folder: Path, lean_doc: dict, check_ok=True):
        self.folder, self.lean_doc, self.check_ok = folder, lean_doc, check_ok
        self.started: list[tuple[int, bool]] = []

    def start(self, k, only, lean):
        self.started.append((k, lean))
        path = self.folder / f"run{k}-{len(self.started)}.json"
        path.write_text(json.dumps(self.lean_doc if lean else run_doc()))
        code = 0 if (lean or self.check_ok) else 1
        return ChildRun("check run" if k == 0 else f"run {k}", code, path, path, 10.0, lean, sample=lean)

    def vouches(self, record):
        return lambda child: check_pass.verify(record, json.loads(child.json_path.read_text()))


def test_a_vouched_gate_runs_no_check_run_and_plans_from_the_record(tmp_path):
    record = passed()
    runs = Runs(tmp_path, run_doc(kind="lean", sample=True))
    lines: list[str] = []
    out = run_auto(
        runs.start, Budget(1e9, max_runs=3), prior=record, vouches=runs.vouches(record), say=lines.append
    )
    assert runs.started == [(1, True), (2, True), (3, True)]
    assert out.check is None and "check run skipped" in out.check_skipped
    assert out.predicted_wall(None) == 10.0  # measured now; before the first lean run, the record's 20 s
    assert any("check run skipped" in line and "/runs/check.log" in line for line in lines)


def test_a_record_that_does_not_vouch_runs_the_check_run_right_after_the_first_lean_run(tmp_path):
    record = passed()
    runs = Runs(tmp_path, run_doc(kind="lean", sample=True, torch_version="2.12.0"))
    lines: list[str] = []
    out = run_auto(
        runs.start, Budget(1e9, max_runs=3), prior=record, vouches=runs.vouches(record), say=lines.append
    )
    assert runs.started == [(1, True), (0, False), (2, True), (3, True)]
    assert out.check is not None and out.check_skipped == ""
    assert any("check run after all: the stack differs (torch)" in line for line in lines)
    assert len(out.samples) == 3  # the lean run before the check is a sample like the others


def test_a_check_run_after_all_that_fails_ends_the_gate(tmp_path):
    record = passed()
    runs = Runs(tmp_path, run_doc(kind="lean", sample=True, code="new"), check_ok=False)
    out = run_auto(runs.start, Budget(1e9, max_runs=3), prior=record, vouches=runs.vouches(record))
    assert runs.started == [(1, True), (0, False)]
    assert out.failed is not None and out.failed.label == "check run"
    assert "check run failed" in out.stop_reason


def test_the_mode_option_names_what_is_allowed():
    assert check_pass.parse_mode("always") == "always"
    with pytest.raises(ValueError, match=r"--aorta-check-run='sometimes': expected one of auto, always"):
        check_pass.parse_mode("sometimes")
