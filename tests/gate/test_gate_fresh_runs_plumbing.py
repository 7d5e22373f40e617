"""The plumbing of a gate's fresh runs (aorta/gate/runs/fresh_runs.py, issue 58), with ``call_to_end`` scripted: the
command each child gets and every option the parent keeps to itself, the child's environment (its label, the
shared slowdown file, ``PYTEST_ADDOPTS`` cleaned), its log's first line with no secret in it, where its done file
goes, how its end is read (a signal as 128 + N, in words; a run hung at exit), the sample record, the lean
estimate, the folder of a gate's runs, and the line each run says."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from aorta.gate.runs import fresh_runs
from aorta.gate.runs.blocks import RUN_KEY
from aorta.gate.runs.run_wall import WALL_KEY
from aorta.timing.slowdown import UNITS_ENV

# every option the gate keeps to itself, as a user writes it: none may reach a child
VALUE_OPTIONS = [
    "--aorta-compare",
    "--aorta-save-baseline",
    "--aorta-baseline-dir",
    "--aorta-verdict-json",
    "--aorta-markdown",
    "--aorta-confirm",
    "--aorta-runs",
    "--aorta-min-effect",
    "--aorta-max-mde",
    "--aorta-threshold",
    "--aorta-alpha",
    "--aorta-allow-env-diff",
    "--aorta-order-seed",
    "--aorta-only-file",
    "--aorta-budget",
    "--aorta-min-judged",
    "--benchmark-json",
]
FLAGS = ["--aorta-replace-baseline", "--aorta-allow-mismatch", "--aorta-lean-run"]


@pytest.mark.parametrize("option", VALUE_OPTIONS)
def test_each_option_the_parent_keeps_is_taken_out_with_its_value_in_both_spellings(option):
    assert fresh_runs.without_parent_options(["a", option, "v", "b", f"{option}=w", "c"]) == ["a", "b", "c"]


@pytest.mark.parametrize("flag", FLAGS)
def test_each_flag_the_parent_keeps_is_taken_out_alone(flag):
    assert fresh_runs.without_parent_options(["a", flag, "b"]) == ["a", "b"]


def test_an_option_that_only_starts_like_the_parent_s_reaches_the_child():
    args = [
        "--aorta-runs-extra=1",
        "--aorta-compare-x",
        "v",
        "-k",
        "--aorta-runs",
    ]  # the last one: no value left
    assert fresh_runs.without_parent_options(args) == ["--aorta-runs-extra=1", "--aorta-compare-x", "v", "-k"]


def test_addopts_lose_the_parent_s_options_and_keep_their_quoting():
    value = "-p no:x --aorta-compare base -k 'a and b' --aorta-runs=3 --aorta-lean-run"
    assert fresh_runs.child_addopts(value) == "-p no:x -k 'a and b'"


def test_a_lean_child_asks_for_a_lean_run_after_its_own_options(tmp_path):
    child = fresh_runs.child_args(
        ["b"], json_path=tmp_path / "j.json", seed=3, only_file=tmp_path / "o", lean=True
    )
    assert child == [
        "b",
        f"--benchmark-json={tmp_path / 'j.json'}",
        "--aorta-order-seed=3",
        "--aorta-runs=1",
        "--aorta-confirm=0",
        f"--aorta-only-file={tmp_path / 'o'}",
        "--aorta-lean-run",
        "--aorta-kernel-pass-rounds=2",
    ]


# ----------------------------------------------------------------------------------- one child, scripted
class Scripted:
    """``call_to_end`` scripted: records each call and answers ``(raw, hung)``, writing ``doc`` as the JSON."""

    def __init__(self, raw: int = 0, hung: str = "", doc: dict | None = None) -> None:
        self.raw, self.hung, self.doc = raw, hung, doc
        self.calls: list[tuple[list[str], dict]] = []
        self.log_at_start = ""

    def __call__(self, cmd, **kw):
        self.calls.append((cmd, kw))
        kw["stdout"].flush()
        self.log_at_start = Path(kw["stdout"].name).read_text()
        if self.doc is not None:
            path = next(a.split("=", 1)[1] for a in cmd if a.startswith("--benchmark-json="))
            Path(path).write_text(json.dumps(self.doc))
        return self.raw, self.hung


@pytest.fixture
def clean_env(monkeypatch):
    for name in (UNITS_ENV, "PYTEST_ADDOPTS", fresh_runs.CHILD_ENV):
        monkeypatch.delenv(name, raising=False)


def test_a_child_s_command_environment_log_and_done_file(tmp_path, monkeypatch, clean_env):
    monkeypatch.setenv("PYTEST_ADDOPTS", "--aorta-compare base -q")
    monkeypatch.setenv("DB_PASSWORD", "hunter22")
    call = Scripted(doc={"benchmarks": []})
    monkeypatch.setattr(fresh_runs, "call_to_end", call)
    said: list[str] = []
    run = fresh_runs.run_child(
        ["bench", "-k", "hunter22", "--aorta-runs", "3"],
        cwd=tmp_path / "cwd",
        out_dir=tmp_path,
        name="run2",
        label="run 2/3",
        seed=9,
        say=said.append,
        env={"EXTRA": "1"},
    )
    ((cmd, kw),) = call.calls
    assert cmd == [
        sys.executable,
        "-m",
        "pytest",
        *fresh_runs.child_args(
            ["bench", "-k", "hunter22", "--aorta-runs", "3"], json_path=tmp_path / "run2.json", seed=9
        ),
    ]
    env = kw.pop("env")
    assert env[fresh_runs.CHILD_ENV] == "run 2/3" and env["EXTRA"] == "1"
    assert env[UNITS_ENV] == str(tmp_path / "slowdown_units.json")  # one calibration for the gate's runs
    assert env["PYTEST_ADDOPTS"] == "-q"
    assert env["DB_PASSWORD"] == "hunter22"  # the child gets the secret; the log does not
    stdout = kw.pop("stdout")
    assert stdout.name == str(tmp_path / "run2.log") and stdout.closed
    assert kw == {
        "done_file": str(tmp_path / "run2.done"),
        "cwd": tmp_path / "cwd",
        "stderr": subprocess.STDOUT,
    }
    assert call.log_at_start == "$ " + " ".join(cmd).replace("hunter22", "***") + "\n"
    assert (run.label, run.exit_code, run.json_path, run.log_path) == (
        "run 2/3",
        0,
        tmp_path / "run2.json",
        tmp_path / "run2.log",
    )
    assert (run.lean, run.ended, run.sample, run.ok) == (False, "exit 0", True, True)
    assert re.fullmatch(
        rf"aorta gate: run 2/3: ok in \d+\.\d s, log {re.escape(str(tmp_path / 'run2.log'))}", said[0]
    )
    assert len(said) == 1


def test_the_gate_s_own_settings_win_over_the_defaults_and_the_label_over_everything(
    tmp_path, monkeypatch, clean_env
):
    monkeypatch.setenv(UNITS_ENV, "/mine.json")
    call = Scripted()
    monkeypatch.setattr(fresh_runs, "call_to_end", call)
    fresh_runs.run_child(
        ["b"],
        cwd=tmp_path,
        out_dir=tmp_path,
        name="c1",
        label="confirm 1/2",
        seed=1,
        say=lambda s: None,
        env={fresh_runs.CHILD_ENV: "not this", "PYTEST_ADDOPTS": ""},
    )
    env = call.calls[0][1]["env"]
    assert env[UNITS_ENV] == "/mine.json" and env[fresh_runs.CHILD_ENV] == "confirm 1/2"
    assert env["PYTEST_ADDOPTS"] == ""  # empty stays empty


def test_a_child_killed_by_a_signal_is_exit_128_plus_n_in_words_and_a_hung_one_is_said(tmp_path, monkeypatch):
    monkeypatch.setattr(
        fresh_runs, "call_to_end", Scripted(raw=-9, hung="ended its session (exit 0) but ...")
    )
    said: list[str] = []
    run = fresh_runs.run_child(
        ["b"], cwd=tmp_path, out_dir=tmp_path, name="run1", label="run 1/2", seed=1, say=said.append
    )
    assert (run.exit_code, run.ended, run.ok) == (137, "killed by signal 9 (SIGKILL), exit 137", False)
    assert said[0].startswith(
        "aorta gate: run 1/2: FAILED (killed by signal 9 (SIGKILL), exit 137, no JSON) in "
    )
    assert said[1] == "aorta gate: run 1/2 ended its session (exit 0) but ..."


def test_a_lean_child_says_so_plans_no_lean_run_and_a_full_one_plans_from_its_record(tmp_path, monkeypatch):
    doc = {WALL_KEY: {"tests_s": 5.0, "timed_s": 1.0, "lean_skips_s": 1e6}, RUN_KEY: {"sample": False}}
    monkeypatch.setattr(fresh_runs, "call_to_end", Scripted(doc=doc))
    said: list[str] = []
    lean = fresh_runs.run_child(
        ["b"],
        cwd=tmp_path,
        out_dir=tmp_path,
        name="run1",
        label="run 1/2",
        seed=1,
        lean=True,
        say=said.append,
    )
    assert lean.lean and lean.lean_estimate_s is None and lean.sample is False
    assert said[0].startswith("aorta gate: run 1/2 (lean): ok in ")
    full = fresh_runs.run_child(
        ["b"], cwd=tmp_path, out_dir=tmp_path, name="run2", label="run 2/2", seed=2, say=said.append
    )
    assert full.lean_estimate_s == 0.0  # its wall less a million seconds a lean run skips: never below 0
    monkeypatch.setattr(fresh_runs, "call_to_end", Scripted(doc={}))
    bare = fresh_runs.run_child(
        ["b"], cwd=tmp_path, out_dir=tmp_path, name="run3", label="run 3/3", seed=3, say=said.append
    )
    assert bare.lean_estimate_s == bare.wall_s  # no record: the whole wall, the cautious guess


def test_run_children_passes_each_child_its_name_label_seed_restriction_and_lean(tmp_path, monkeypatch):
    seen = []

    def run_child(args, **kw):
        seen.append(kw)
        return fresh_runs.ChildRun(kw["label"], 0, tmp_path / "ok.json", tmp_path / "l", 1.0)

    (tmp_path / "ok.json").write_text("{}")
    monkeypatch.setattr(fresh_runs, "run_child", run_child)
    runs = fresh_runs.run_children(
        ["b"],
        cwd=tmp_path,
        out_dir=tmp_path,
        count=2,
        kind="confirm",
        first_seed=4,
        only=["t::a", "t::b"],
        say=print,
        env={"E": "1"},
        lean=True,
    )
    assert [r.label for r in runs] == ["confirm 1/2", "confirm 2/2"]
    only = tmp_path / "confirm-only.txt"
    assert only.read_text() == "t::a\nt::b\n"
    assert [
        (k["name"], k["seed"], k["only_file"], k["lean"], k["env"], k["cwd"], k["out_dir"]) for k in seen
    ] == [
        ("confirm1", 4, only, True, {"E": "1"}, tmp_path, tmp_path),
        ("confirm2", 5, only, True, {"E": "1"}, tmp_path, tmp_path),
    ]
    assert all(k["say"] is print for k in seen)


def test_a_run_of_every_benchmark_writes_no_restriction_and_an_empty_one_writes_an_empty_file(tmp_path):
    assert fresh_runs.write_only_file(tmp_path, "run", None) is None
    assert list(tmp_path.iterdir()) == []
    empty = fresh_runs.write_only_file(tmp_path, "confirm", [])
    assert empty == tmp_path / "confirm-only.txt" and empty.read_text() == ""


# ------------------------------------------------------------------------------------- records and folders
@pytest.mark.parametrize(
    ("text", "sample"),
    [
        (None, True),  # no JSON: taken as a sample
        ("not json", True),
        ("[1, 2]", True),  # not a document: no record
        ("{}", True),  # an older aorta's run: no record
        (json.dumps({RUN_KEY: {"sample": False}}), False),
        (json.dumps({RUN_KEY: {"sample": True}}), True),
    ],
)
def test_a_run_is_a_sample_unless_its_record_says_otherwise(tmp_path, text, sample):
    path = tmp_path / "run.json"
    if text is not None:
        path.write_text(text)
    assert fresh_runs.recorded_sample(path) is sample


@pytest.mark.parametrize("text", [None, "not json", "[1]"])
def test_a_run_without_a_readable_document_has_no_wall_record(tmp_path, text):
    path = tmp_path / "run.json"
    if text is not None:
        path.write_text(text)
    assert fresh_runs.read_doc(path) is None
    child = fresh_runs.ChildRun("run 1/1", 0, path, tmp_path / "l", 12.0)
    assert not fresh_runs.wall_of(child, "full").known


def test_a_gate_s_runs_go_in_a_new_folder_named_by_utc_time_and_pid(tmp_path, monkeypatch):
    from datetime import UTC, datetime

    class Fixed:
        @staticmethod
        def now(tz):
            assert tz is UTC
            return datetime(2026, 1, 2, 3, 4, 5, tzinfo=tz)

    monkeypatch.setattr(fresh_runs, "datetime", Fixed)
    root = tmp_path / "deep" / "runs"
    d = fresh_runs.runs_dir(root)
    assert d == root / f"20260102T030405Z-{os.getpid()}" and d.is_dir()
    with pytest.raises(FileExistsError):  # never two gates' runs in one folder
        fresh_runs.runs_dir(root)


def test_a_restricted_lean_child_is_told_both_and_its_wall_is_its_own(tmp_path, monkeypatch):
    call = Scripted(doc={})
    monkeypatch.setattr(fresh_runs, "call_to_end", call)
    only = tmp_path / "confirm-only.txt"
    run = fresh_runs.run_child(
        ["b"],
        cwd=tmp_path,
        out_dir=tmp_path,
        name="confirm1",
        label="confirm 1/1",
        seed=1,
        only_file=only,
        lean=True,
        say=lambda s: None,
    )
    cmd = call.calls[0][0]
    assert cmd[-3:] == [f"--aorta-only-file={only}", "--aorta-lean-run", "--aorta-kernel-pass-rounds=2"]
    assert 0.0 <= run.wall_s < 60.0  # the seconds the child took, not a clock reading


def test_the_first_run_of_a_gate_has_seed_1_by_default(tmp_path, monkeypatch):
    seeds = []
    monkeypatch.setattr(
        fresh_runs,
        "run_child",
        lambda args, **kw: (
            seeds.append(kw["seed"])
            or fresh_runs.ChildRun(kw["label"], 1, tmp_path / "x", tmp_path / "l", 1.0)
        ),
    )
    fresh_runs.run_children(["b"], cwd=tmp_path, out_dir=tmp_path, count=3, say=lambda s: None)
    assert seeds == [1]  # the first failed: no second run


def test_wall_of_names_the_kind_asked_and_reads_the_child_s_record(tmp_path):
    path = tmp_path / "run1.json"
    path.write_text(json.dumps({WALL_KEY: {"tests_s": 12.0, "timed_s": 7.0}}))
    w = fresh_runs.wall_of(fresh_runs.ChildRun("run 1/1", 0, path, tmp_path / "l", 18.0), "confirm")
    assert (w.kind, w.wall_s, w.timed, w.checks, w.start, w.known) == ("confirm", 18.0, 7.0, 5.0, 6.0, True)


NODEIDS = ["a.py::C::t1", "a.py::C::t2", "a.py::D::t3", "b.py::t4", "b.py::E::t5", "c.py::t6"]


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6, 7])
def test_the_order_moves_whole_files_even_where_items_sit_in_classes(seed):
    order = fresh_runs.order_items(NODEIDS, seed)
    assert sorted(order) == list(range(len(NODEIDS)))
    files = [NODEIDS[i].split("::")[0] for i in order]
    runs = [f for k, f in enumerate(files) if k == 0 or files[k - 1] != f]
    assert sorted(runs) == ["a.py", "b.py", "c.py"]  # each file's items together, classes and all
    a_items = [i for i in order if NODEIDS[i].startswith("a.py")]
    assert a_items == ([2, 1, 0] if seed % 2 else [0, 1, 2])  # odd seeds: last to first within the file
