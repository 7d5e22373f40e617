"""A bad input never costs a finished run: the gate inside pytest refuses it before any benchmark runs, with
a sentence naming the option or file and what is wrong (pytest's usage-error code 4, no traceback); what
is only knowable at the end (nothing compared, a save that failed) gets its own non-zero exit code."""

import json
import os
import re

import pytest
from test_gate_plugin import baseline_file, run, saved

USAGE = pytest.ExitCode.USAGE_ERROR


def nothing_ran(r) -> bool:
    out = r.stdout.str()
    return "test_spin" not in out and "passed" not in out and "Traceback" not in out + r.stderr.str()


def literal(text: str) -> str:
    """``text`` as an fnmatch pattern of itself: brackets taken literally."""
    return re.sub(r"[][]", lambda m: f"[{m.group()}]", text)


def a_file(pytester) -> str:
    """A plain file: nothing can ever be created under it, even by root (a chmod'ed folder can)."""
    f = pytester.path / "plain_file"
    f.write_text("x")
    return str(f)


# ------------------------------------------------------------------------------ 1. bad samples in a baseline
def _spoil(doc: dict, kind: str) -> str:
    b = doc["benchmarks"][0]
    if kind == "data_null":
        b["stats"]["data"][3] = None
        return "benchmarks[0].stats.data[3]: null, expected a number"
    if kind == "device_ms_string":
        b["extra_info"]["device_ms_per_iteration"][1] = "fast"
        return "benchmarks[0].extra_info.device_ms_per_iteration[1]: a string 'fast', expected a number"
    if kind == "device_ms_negative":
        b["extra_info"]["device_ms_per_iteration"][0] = -1.5
        return "benchmarks[0].extra_info.device_ms_per_iteration[0]: -1.5, a time cannot be negative"
    if kind == "metric_nan":
        b["extra_info"]["metrics"]["rate"]["samples"][2] = float("nan")
        return "benchmarks[0].extra_info.metrics.rate.samples[2]: NaN, expected a finite number"
    if kind == "metrics_not_mapping":
        b["extra_info"]["metrics"] = [1, 2]
        return "benchmarks[0].extra_info.metrics: is a list, expected a mapping*"
    raise KeyError(kind)


@pytest.mark.parametrize(
    "kind", ["data_null", "device_ms_string", "device_ms_negative", "metric_nan", "metrics_not_mapping"]
)
def test_a_baseline_with_bad_samples_is_refused_naming_the_file_and_field(bench_dir, monkeypatch, kind):
    path = saved(bench_dir, monkeypatch)
    doc = json.loads(path.read_text())
    why = _spoil(doc, kind)
    path.write_text(json.dumps(doc))  # NaN written as JSON's NaN, as json.dumps does
    r = run(bench_dir, "--aorta-compare", "base")
    assert r.ret == USAGE, r.stdout.str()
    r.stderr.fnmatch_lines([literal(f"ERROR: --aorta-compare: {path}: {why}")])
    assert nothing_ran(r)


# ------------------------------------------------------------------------------ 3. a gate that compared nothing
def test_a_baseline_holding_other_benchmarks_compares_nothing_exit_12(bench_dir, monkeypatch):
    path = saved(bench_dir, monkeypatch)
    doc = json.loads(path.read_text())
    doc["benchmarks"][0]["fullname"] = "test_moe.py::test_moe[streams8]"
    path.write_text(json.dumps(doc))
    r = run(bench_dir, "--aorta-compare", "base", "--aorta-markdown", "gate.md")
    assert r.ret == 12, r.stdout.str()
    r.stdout.fnmatch_lines(
        [
            "not in baseline (new in this run): test_spin.py::test_spin[[]streams1[]]",
            "missing from this run (in the baseline): test_moe.py::test_moe[[]streams8[]]",
            "verdict: NOTHING COMPARED: none of the 1 benchmark(s) of this run is in the baseline "
            "(1 there) -> exit 12 (nothing compared*)",
        ]
    )
    verdict = json.loads((bench_dir.path / "reports" / "aorta-verdict.json").read_text())
    assert verdict["exit_code"] == 12 and verdict["comparisons"][0]["nothing_compared"] is True
    assert "NOTHING COMPARED" in (bench_dir.path / "gate.md").read_text()


def test_benchmarks_not_in_the_baseline_are_listed_and_do_not_fail_the_gate(counted_work, monkeypatch):
    saved(counted_work, monkeypatch)  # streams1 only
    r = run(counted_work, "--aorta-streams=1,2", "--aorta-compare", "base", "--aorta-min-effect", "50%")
    assert r.ret == 0, r.stdout.str()
    r.stdout.fnmatch_lines(
        [
            "not in baseline (new in this run): test_spin.py::test_spin[[]streams2[]]",
            "verdict: 0 SLOWER, 0 FASTER, 2 SAME, 0 UNSURE, 0 NOT_GATEABLE, 1 not in baseline -> exit 0 (clean)",
        ]
    )


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["-n", "2", "--aorta-compare", "base"],
            "-n 2 with --aorta-compare: pytest-xdist disables pytest-benchmark*",
        ),
        (
            ["-n", "2", "--aorta-save-baseline", "new"],
            "-n 2 with --aorta-save-baseline: *without -n (or with -n 0)",
        ),
        (["--benchmark-disable", "--aorta-compare", "base"], "--benchmark-disable with --aorta-compare: *"),
    ],
)
def test_a_gate_where_no_benchmark_would_be_timed_is_refused_up_front(bench_dir, monkeypatch, args, message):
    saved(bench_dir, monkeypatch)
    r = run(bench_dir, *args)
    assert r.ret == USAGE, r.stdout.str()
    r.stderr.fnmatch_lines([f"ERROR: {message}"])
    assert nothing_ran(r) and not baseline_file(bench_dir, "new").exists()


# ------------------------------------------------------------------------------ 4. a baseline that could not be saved
def test_an_unwritable_baseline_dir_is_refused_before_any_benchmark_runs(bench_dir):
    bad = os.path.join(a_file(bench_dir), "baselines")
    r = run(bench_dir, "--aorta-save-baseline", "x", "--aorta-baseline-dir", bad)
    assert r.ret == USAGE, r.stdout.str()
    r.stderr.fnmatch_lines(
        [
            f"ERROR: --aorta-baseline-dir {bad}: cannot be created: {os.path.dirname(bad)} is a file, not a folder"
        ]
    )
    assert nothing_ran(r)


def test_a_machine_folder_that_is_a_file_is_refused_before_the_run(bench_dir, monkeypatch):
    kept = saved(bench_dir, monkeypatch)
    before = kept.read_bytes()
    blocked = bench_dir.path / "dir2"
    blocked.mkdir()
    (blocked / "cpu").write_text("a file where the machine's folder would go")
    r = run(bench_dir, "--aorta-save-baseline", "base", "--aorta-baseline-dir", str(blocked))
    assert r.ret == USAGE, r.stdout.str()
    r.stderr.fnmatch_lines(
        [
            f"ERROR: --aorta-save-baseline base: --aorta-baseline-dir {blocked / 'cpu'}: *is a file, not a folder"
        ]
    )
    assert nothing_ran(r)
    assert kept.read_bytes() == before and (blocked / "cpu").read_text().startswith("a file")


# ------------------------------------------------------------------------------ 6. verdict and markdown places
@pytest.mark.parametrize("option", ["--aorta-verdict-json", "--aorta-markdown"])
def test_an_uncreatable_verdict_or_markdown_place_is_refused_up_front(bench_dir, monkeypatch, option):
    saved(bench_dir, monkeypatch)
    bad = os.path.join(a_file(bench_dir), "sub", "out")
    r = run(bench_dir, "--aorta-compare", "base", option, bad)
    assert r.ret == USAGE, r.stdout.str()
    r.stderr.fnmatch_lines(
        [f"ERROR: {option} {bad}: cannot be created: {a_file(bench_dir)} is a file, not a folder"]
    )
    assert nothing_ran(r)


def test_a_verdict_path_that_is_a_folder_is_refused(bench_dir, monkeypatch):
    saved(bench_dir, monkeypatch)
    (bench_dir.path / "adir").mkdir()
    r = run(bench_dir, "--aorta-compare", "base", "--aorta-verdict-json", "adir")
    assert r.ret == USAGE
    r.stderr.fnmatch_lines(["ERROR: --aorta-verdict-json adir: is a folder; give a file name*"])


def test_a_missing_folder_that_can_be_created_is_fine(counted_work, monkeypatch):
    saved(counted_work, monkeypatch)
    r = run(
        counted_work,
        "--aorta-compare",
        "base",
        "--aorta-min-effect",
        "50%",
        "--aorta-verdict-json",
        "new/deep/v.json",
        "--aorta-markdown",
        "md/g.md",
    )
    assert r.ret == 0, r.stdout.str()
    assert json.loads((counted_work.path / "new" / "deep" / "v.json").read_text())["exit_code"] == 0
    assert (counted_work.path / "md" / "g.md").exists()


# ------------------------------------------------------------------------------ 5. files as readable as any output
def test_baseline_and_verdict_files_get_the_mode_of_a_plain_open(counted_work, monkeypatch):
    old = os.umask(0o022)
    try:
        plain = counted_work.path / "plain.txt"
        with open(plain, "w") as fh:
            fh.write("x")
        # the first save in this session, or a copy: see below
        path = saved(counted_work, monkeypatch, name="modes")
        r = run(
            counted_work,
            "--aorta-compare",
            "modes",
            "--aorta-min-effect",
            "50%",
            "--aorta-save-baseline",
            "again",
        )
        assert r.ret == 0, r.stdout.str()
    finally:
        os.umask(old)
    want = plain.stat().st_mode & 0o777
    assert want == 0o644
    assert baseline_file(counted_work, "again").stat().st_mode & 0o777 == want
    assert (counted_work.path / "reports" / "aorta-verdict.json").stat().st_mode & 0o777 == want
    assert path.exists()
