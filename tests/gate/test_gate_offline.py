"""Comparing saved runs, baselines on disk, and ``aorta compare`` (pure: no torch, no benchmarks run)."""

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from aorta.cli import main
from aorta.exit_codes import (
    EXIT_CLEAN,
    EXIT_INCONCLUSIVE,
    EXIT_MISMATCH,
    EXIT_NOTHING_COMPARED,
    EXIT_REGRESSION,
)
from aorta.gate.baselines import baseline as bl
from aorta.gate.comparison.compare import GateSettings, compare_runs, parse_threshold
from aorta.gate.outputs.render import header_lines, markdown, terminal_lines
from aorta.gate.verdicts.verdict import NOT_GATEABLE, SAME, SLOWER, UNSURE

REPO = Path(__file__).resolve().parents[2]
H100 = {
    "backend": "cuda",
    "gpu_name": "NVIDIA H100 80GB HBM3",
    "gpu_count": 1,
    "driver": "580.159",
    "cuda": "13.0",
    "hip": None,
    "torch": "2.11.0+cu130",
    "nccl": "2.28.9",
    "env": {"NCCL_NVLS_ENABLE": "0"},
    "hardware_queues": {"CUDA_DEVICE_MAX_CONNECTIONS": "default (8)"},
}


def bench(name: str, device_ms: float, *, seed: int = 0, n: int = 20, metrics: bool = True) -> dict:
    rng = random.Random(seed)
    ms = [device_ms * (1 + rng.gauss(0, 0.004)) for _ in range(n)]
    extra = {"aorta_schema": 1, "device_ms_per_iteration": ms}
    if metrics:
        tf = [1000.0 / m for m in ms]
        extra["metrics"] = {
            "tflops": {
                "value": sorted(tf)[n // 2],
                "unit": "TFLOP/s",
                "higher_is_better": True,
                "samples": tf,
            }
        }
    return {
        "fullname": f"benchmarks/hw_queue/test_x.py::{name}",
        "name": name,
        "extra_info": extra,
        "stats": {"data": [m / 1e3 for m in ms], "median": sorted(ms)[n // 2] / 1e3},
    }


def run(benches, **machine) -> dict:
    return {
        "machine_info": {"python_version": "3.12.3", "aorta": {**H100, **machine}},
        "benchmarks": benches,
        "version": "5.2.3",
    }


def multi(name: str, centers, *, seed: int = 0, **machine) -> dict:
    """A document holding one run per center: fresh processes of one stack, each on its own shift."""
    docs = [run([bench(name, c, seed=seed + i)], **machine) for i, c in enumerate(centers)]
    return bl.combine_runs(docs, [f"run{i + 1}" for i in range(len(docs))])


BASE = [10.0, 10.03, 9.97, 10.01]  # four baseline runs, 0.3% apart
AGAIN = [10.02, 9.98, 10.0]  # the same stack again
SLOW = [10.6, 10.63, 10.58]  # 6% slower


def names(v):
    return [(x.benchmark.split("::")[-1], x.metric, x.outcome) for x in v]


# ---------------------------------------------------------------------- compare_runs
def test_same_code_twice_is_clean():
    comp = compare_runs(multi("a", BASE), multi("a", AGAIN, seed=10))
    assert names(comp.verdicts) == [("a", "device_ms", SAME), ("a", "tflops", SAME)]
    assert comp.exit_code == EXIT_CLEAN and (comp.ref_runs, comp.cand_runs) == (4, 3)


def test_slower_device_time_and_metric_give_the_regression_code():
    comp = compare_runs(multi("a", BASE), multi("a", SLOW, seed=10))
    assert names(comp.verdicts) == [("a", "device_ms", SLOWER), ("a", "tflops", SLOWER)]
    assert comp.exit_code == EXIT_REGRESSION and comp.slower_benchmarks() == [comp.verdicts[0].benchmark]
    assert comp.verdicts[0].cand_run_ids == ("run1", "run2", "run3")


def test_one_run_against_one_run_is_not_gateable_and_never_a_regression():
    comp = compare_runs(run([bench("a", 10.0, seed=1)]), run([bench("a", 13.0, seed=2)]))
    assert {v.outcome for v in comp.verdicts} == {NOT_GATEABLE} and comp.exit_code == EXIT_INCONCLUSIVE
    text = "\n".join(terminal_lines(comp))
    assert "not gateable on this machine (2)" in text and "--aorta-runs" in text


def two_benchmarks(a_centers, b_centers, seed: int = 0) -> dict:
    """A multi-run document of benchmarks a and b, run k of each in the same process k."""
    docs = [
        run([bench("a", x, seed=seed + i), bench("b", y, seed=seed + 50 + i)])
        for i, (x, y) in enumerate(zip(a_centers, b_centers))
    ]
    return bl.combine_runs(docs, [f"run{i + 1}" for i in range(len(docs))])


def test_confirmation_runs_join_the_candidates_runs_of_the_benchmarks_they_hold():
    ref = two_benchmarks(BASE, BASE)
    cand = two_benchmarks([10.1, 10.04, 10.12], AGAIN, seed=10)  # a: +0.9%, suggestive only
    first = compare_runs(ref, cand)
    assert first.suspects() == ["benchmarks/hw_queue/test_x.py::a"]
    extra = [run([bench("a", 10.11, seed=30)]), run([bench("a", 10.1, seed=31)])]
    confirmed = compare_runs(ref, cand, extra_runs=extra)
    va = next(v for v in confirmed.verdicts if v.benchmark.endswith("::a") and v.metric == "device_ms")
    vb = next(v for v in confirmed.verdicts if v.benchmark.endswith("::b") and v.metric == "device_ms")
    assert va.cand_run_ids == ("run1", "run2", "run3", "confirm1", "confirm2")
    assert vb.cand_run_ids == ("run1", "run2", "run3")
    assert confirmed.cand_runs == 3


def test_new_and_missing_benchmarks_are_listed():
    comp = compare_runs(
        run([bench("a", 10.0), bench("gone", 1.0)]), run([bench("a", 10.0), bench("added", 1.0)])
    )
    assert [n.split("::")[-1] for n in comp.missing] == ["gone"]
    assert [n.split("::")[-1] for n in comp.new] == ["added"]
    text = "\n".join(terminal_lines(comp))
    assert "missing from this run (in the baseline): benchmarks/hw_queue/test_x.py::gone" in text
    assert "not in baseline (new in this run): benchmarks/hw_queue/test_x.py::added" in text


def test_without_raw_samples_falls_back_to_saved_data_then_a_single_value():
    b_ref, b_new = bench("a", 10.0, seed=1, metrics=False), bench("a", 12.0, seed=2, metrics=False)
    for b in (b_ref, b_new):
        del b["extra_info"]["device_ms_per_iteration"]
    refs = [json.loads(json.dumps(b_ref)) for _ in range(3)]
    for i, b in enumerate(refs):
        b["stats"]["data"] = [x * (1 + 0.001 * i) for x in b["stats"]["data"]]
    ref = bl.combine_runs([run([b]) for b in refs], ["r1", "r2", "r3"])
    cand = bl.combine_runs([run([b_new]), run([b_new])], ["c1", "c2"])
    assert names(compare_runs(ref, cand).verdicts) == [("a", "device_ms", SLOWER)]
    for b in (*refs, b_new):
        del b["stats"]["data"]
    ref = bl.combine_runs([run([b]) for b in refs], ["r1", "r2", "r3"])
    v = compare_runs(ref, run([b_new])).verdicts[0]
    assert v.outcome == UNSURE and "too few samples: 1 round(s)" in v.reason


def test_another_world_size_is_refused_unless_allowed():
    def ranks(n):
        b = bench("fsdp_baseline", 10.0)
        b["extra_info"]["world_size"] = n
        return run([b, bench("other", 5.0)])

    comp = compare_runs(ranks(2), ranks(4))
    assert comp.exit_code == EXIT_MISMATCH and comp.verdicts == []
    assert comp.mismatch == (
        "world size differs: fsdp_baseline ran on 2 rank(s) in the baseline, 4 in this run "
        "(save one baseline per world size)"
    )
    assert compare_runs(ranks(2), ranks(2)).mismatch is None
    assert compare_runs(ranks(2), ranks(4), GateSettings(allow_mismatch=True)).verdicts


def test_other_gpu_model_is_refused_unless_allowed():
    ref, cand = run([bench("a", 10.0)], gpu_name="NVIDIA H200"), run([bench("a", 10.0)])
    comp = compare_runs(ref, cand)
    assert comp.exit_code == EXIT_MISMATCH and comp.verdicts == []
    assert "GPU model differs: baseline 'NVIDIA H200', this run 'NVIDIA H100 80GB HBM3'" in comp.mismatch
    allowed = compare_runs(ref, cand, GateSettings(allow_mismatch=True, min_judged=0.0))
    assert allowed.exit_code == EXIT_INCONCLUSIVE and allowed.verdicts  # one run a side: judged nothing
    assert any("HARDWARE MISMATCH" in line for line in header_lines(allowed))


def test_header_shows_both_stacks_and_env_differences():
    ref = run([bench("a", 10.0)], cuda="12.8", torch="2.9.0", nccl="2.27.3")
    cand = run(
        [bench("a", 10.0)],
        env={"NCCL_NVLS_ENABLE": "0", "NCCL_ALGO": "Ring"},
        hardware_queues={"CUDA_DEVICE_MAX_CONNECTIONS": "32"},
    )
    lines = header_lines(compare_runs(ref, cand))
    assert (
        "stack: driver 580.159, cuda 12.8 -> 13.0, torch 2.9.0 -> 2.11.0+cu130, nccl 2.27.3 -> 2.28.9, "
        "python 3.12.3" in lines
    )
    assert "env differs: CUDA_DEVICE_MAX_CONNECTIONS default (8) -> 32, NCCL_ALGO n/a -> Ring" in lines


def test_thresholds_per_metric_and_per_benchmark():
    s = GateSettings(thresholds=(parse_threshold("tflops=5%"), parse_threshold("*tiny*:device_ms=0.2")))
    assert s.min_effect_for("b/test_x.py::test_gemm", "tflops") == 0.05
    assert s.min_effect_for("b/test_x.py::test_gemm", "device_ms") == 0.01
    assert s.min_effect_for("b/test_x.py::test_tiny_kernel[streams1]", "device_ms") == 0.2
    comp = compare_runs(multi("a", BASE), multi("a", [10.4, 10.43, 10.38], seed=10), s)
    assert names(comp.verdicts) == [("a", "device_ms", SLOWER), ("a", "tflops", SAME)]


def test_a_noise_floor_declared_in_an_older_record_is_ignored_the_measured_noise_decides():
    ref, cand = multi("a", BASE), multi("a", [12.0, 12.04, 11.97], seed=10)  # +20%
    for doc in (ref, cand):
        for b in doc["benchmarks"]:
            b["extra_info"]["min_effect"] = {"device_ms": 0.75}  # schema 1's declared floor
    assert ("a", "device_ms", SLOWER) in names(compare_runs(ref, cand).verdicts)


@pytest.mark.parametrize("text", ["tflops", "=0.1", "tflops=abc", "tflops=-1", "tflops=2000%"])
def test_bad_threshold_names_the_option(text):
    with pytest.raises(ValueError, match="--aorta-threshold"):
        parse_threshold(text)


def test_markdown_has_a_row_per_non_same_verdict():
    comp = compare_runs(multi("a", BASE), multi("a", SLOW, seed=10))
    md = markdown([comp])
    assert md.startswith("### aorta gate :red_circle:")
    assert "| test_x.py::a | device_ms |" in md and "SLOWER" in md


# ---------------------------------------------------------------------- baselines on disk
def test_save_is_keyed_by_machine_and_records_stack_and_options(tmp_path):
    r = run([bench("a", 10.0)], gpu_count=8)
    path, n_runs = bl.save_baseline(r, tmp_path, "cu130", {"rounds": 20})
    assert n_runs == 1
    assert path == tmp_path / "nvidia-h100-80gb-hbm3-x8" / "cu130.json"
    saved = bl.load_run(path)
    assert saved["aorta_baseline"]["stack"]["nccl"] == "2.28.9"
    assert saved["aorta_baseline"]["options"] == {"rounds": 20}
    assert (
        saved["benchmarks"][0]["extra_info"]["device_ms_per_iteration"]
        == r["benchmarks"][0]["extra_info"]["device_ms_per_iteration"]
    )
    assert bl.resolve("cu130", tmp_path, "nvidia-h100-80gb-hbm3-x8") == path
    assert (
        bl.resolve("cu130", tmp_path, "nvidia-h200-x8") == path
    )  # found under another machine: checked later
    with pytest.raises(bl.BaselineError, match="saved baselines: nvidia-h100-80gb-hbm3-x8/cu130"):
        bl.resolve("nope", tmp_path, "nvidia-h100-80gb-hbm3-x8")


def test_a_failed_write_leaves_the_old_baseline_untouched(tmp_path, monkeypatch):
    path, _ = bl.save_baseline(run([bench("a", 10.0)]), tmp_path, "good", {})
    before = path.read_bytes()

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        bl.save_baseline(run([bench("a", 99.0)]), tmp_path, "good", {})
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == [".good.lock", "good.json"]  # no temp file left


BAD_FILES = {
    "empty.json": ("", "is empty"),
    "truncated.json": ('{"machine_info": {"aorta": {}}, "benchmarks": [{"fullname": "x"', "not valid JSON"),
    "notjson.json": ("hello", "not valid JSON"),
    "list.json": ("[1, 2]", "not a pytest-benchmark JSON file"),
    "other.json": (json.dumps({"machine_info": {"node": "x"}, "benchmarks": []}), "not written by aorta"),
    "foreign.json": (
        json.dumps({"machine_info": {"aorta": {}}, "benchmarks": [{"fullname": "t", "extra_info": {}}]}),
        "written by another tool",
    ),
}


@pytest.mark.parametrize("fname", sorted(BAD_FILES))
def test_bad_baseline_files_name_the_file_and_the_problem(tmp_path, fname):
    text, why = BAD_FILES[fname]
    (tmp_path / fname).write_text(text)
    with pytest.raises(bl.BaselineError) as exc:
        bl.load_run(tmp_path / fname)
    assert str(tmp_path / fname) in str(exc.value) and why in str(exc.value)


def test_missing_file(tmp_path):
    with pytest.raises(bl.BaselineError, match="no such file"):
        bl.load_run(tmp_path / "nope.json")


@pytest.mark.parametrize("name", ["a/b", "x.json", "", "-lead", "a b"])
def test_bad_baseline_names(name):
    with pytest.raises(ValueError, match="--aorta-save-baseline"):
        bl.parse_baseline_name(name)


# ---------------------------------------------------------------------- aorta compare
def write(tmp_path, name, doc) -> str:
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return str(p)


def test_cli_compare_exit_codes_and_outputs(tmp_path, capsys, monkeypatch):
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    ref = write(tmp_path, "ref.json", multi("a", BASE))
    same = [write(tmp_path, f"same{i}.json", run([bench("a", c, seed=10 + i)])) for i, c in enumerate(AGAIN)]
    slow = [write(tmp_path, f"slow{i}.json", run([bench("a", c, seed=20 + i)])) for i, c in enumerate(SLOW)]
    h200 = write(tmp_path, "h200.json", multi("a", AGAIN, seed=3, gpu_name="NVIDIA H200"))
    vj, md = tmp_path / "v.json", tmp_path / "v.md"
    common = ["--verdict-json", str(vj), "--markdown", str(md)]

    assert main(["compare", ref, *same, *common]) == EXIT_CLEAN  # the CAND files are one candidate's runs
    doc = json.loads(vj.read_text())
    assert doc["comparisons"][0]["summary"] == "0 SLOWER, 0 FASTER, 2 SAME, 0 UNSURE, 0 NOT_GATEABLE"
    assert doc["comparisons"][0]["runs"] == {"baseline": 4, "candidate": 3}
    assert main(["compare", ref, *slow, *common]) == EXIT_REGRESSION
    doc = json.loads(vj.read_text())
    assert doc["exit_code"] == EXIT_REGRESSION and len(doc["comparisons"]) == 1
    assert doc["comparisons"][0]["slower"] == ["benchmarks/hw_queue/test_x.py::a"]
    v = doc["comparisons"][0]["verdicts"][0]
    assert v["cand_run_ids"] == [*slow] and v["ci_low"] > 0 and 0 < v["mde"] < 0.05
    assert main(["compare", ref, h200, *common]) == EXIT_MISMATCH
    assert main(["compare", ref, h200, "--allow-mismatch", *common]) == EXIT_CLEAN
    out = capsys.readouterr().out
    assert "SLOWER" in out and "refused: GPU model differs" in out and "Traceback" not in out
    assert summary.read_text().count("### aorta gate") == 4
    assert "### aorta gate" in md.read_text()


def test_cli_bad_input_is_exit_2_naming_the_file(tmp_path, capsys):
    ref = write(tmp_path, "ref.json", run([bench("a", 10.0)]))
    empty = tmp_path / "empty.json"
    empty.write_text("")
    vj = tmp_path / "v.json"
    assert main(["compare", ref, str(empty), "--verdict-json", str(vj)]) == 2
    assert f"{empty}: is empty" in capsys.readouterr().err
    assert not vj.exists()
    with pytest.raises(SystemExit) as exc:
        main(["compare", ref, ref, "--min-effect", "lots"])
    assert exc.value.code == 2
    assert "--min-effect='lots': not a number" in capsys.readouterr().err


def test_cli_runs_as_a_module_without_torch(tmp_path):
    ref = write(tmp_path, "ref.json", run([bench("a", 10.0, seed=1)]))
    code = (
        "import sys, runpy; sys.argv = ['aorta', 'compare', sys.argv[1], sys.argv[1], '--verdict-json', '']; "
        "import aorta.cli; assert 'torch' not in sys.modules, 'the gate must not import torch'; "
        "sys.exit(aorta.cli.main())"
    )
    p = subprocess.run(
        [sys.executable, "-c", code, ref],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=60,
    )
    assert p.returncode == EXIT_INCONCLUSIVE, p.stderr  # one run against itself: nothing judged
    assert "aorta compare: exit 15" in p.stdout


# ---------------------------------------------------------------------- bad samples, nothing compared, outputs
@pytest.mark.parametrize(
    "spoil, field",
    [
        (
            lambda b: b["stats"]["data"].__setitem__(2, None),
            "benchmarks[1].stats.data[2]: null, expected a number",
        ),
        (
            lambda b: b["extra_info"]["device_ms_per_iteration"].__setitem__(0, "1.0"),
            "benchmarks[1].extra_info.device_ms_per_iteration[0]: a string '1.0', expected a number",
        ),
        (
            lambda b: b["extra_info"]["device_ms_per_iteration"].__setitem__(4, -2),
            "benchmarks[1].extra_info.device_ms_per_iteration[4]: -2, a time cannot be negative",
        ),
        (
            lambda b: b["extra_info"]["metrics"]["tflops"]["samples"].__setitem__(2, float("nan")),
            "benchmarks[1].extra_info.metrics.tflops.samples[2]: NaN, expected a finite number",
        ),
        (
            lambda b: b["extra_info"]["metrics"]["tflops"].__setitem__("value", "fast"),
            "benchmarks[1].extra_info.metrics.tflops.value: a string 'fast', expected a finite number or null",
        ),
        (
            lambda b: b["extra_info"].__setitem__("metrics", "tflops"),
            "benchmarks[1].extra_info.metrics: is a string 'tflops', expected a mapping",
        ),
        (
            lambda b: b["extra_info"]["metrics"].__setitem__("tflops", 3.0),
            "benchmarks[1].extra_info.metrics.tflops: is 3.0, expected a mapping",
        ),
    ],
)
def test_bad_samples_are_refused_naming_the_file_and_the_field(tmp_path, capsys, spoil, field):
    bad = run([bench("a", 10.0), bench("b", 10.0)])
    spoil(bad["benchmarks"][1])
    path = write(tmp_path, "bad.json", bad)
    with pytest.raises(bl.BaselineError) as exc:
        bl.load_run(path)
    assert str(exc.value).startswith(f"{path}: {field}")
    ok = write(tmp_path, "ok.json", run([bench("a", 10.0)]))
    assert main(["compare", path, ok, "--verdict-json", ""]) == 2  # as the baseline or as a candidate
    assert main(["compare", ok, path, "--verdict-json", ""]) == 2
    err = capsys.readouterr().err
    assert err.count(f"aorta compare: {path}: {field}") == 2 and "Traceback" not in err


def test_a_metric_may_be_negative_and_unavailable(tmp_path):
    b = bench("a", 10.0)
    b["extra_info"]["metrics"]["saving_ms"] = {"value": -0.5, "unit": "ms", "samples": [-0.5, -0.4]}
    b["extra_info"]["metrics"]["overlap_ratio"] = {"value": None, "unit": ""}
    bl.load_run(write(tmp_path, "ok.json", run([b])))


def test_cli_compare_that_matched_nothing_exits_12_in_every_output(tmp_path, capsys):
    ref = write(tmp_path, "ref.json", run([bench("a", 10.0)]))
    other = write(tmp_path, "other.json", run([bench("moe", 10.0)]))
    vj, md = tmp_path / "v.json", tmp_path / "v.md"
    assert (
        main(["compare", ref, other, "--verdict-json", str(vj), "--markdown", str(md)])
        == EXIT_NOTHING_COMPARED
    )
    out = capsys.readouterr().out
    assert "verdict: NOTHING COMPARED: none of the 1 benchmark(s) of other.json" in out.replace(
        str(tmp_path) + "/", ""
    )
    assert "not in baseline (new in this run): benchmarks/hw_queue/test_x.py::moe" in out
    doc = json.loads(vj.read_text())
    assert doc["exit_code"] == 12 and doc["comparisons"][0]["nothing_compared"] is True
    assert "**NOTHING COMPARED**" in md.read_text() and ":red_circle:" in md.read_text()


@pytest.mark.parametrize("option", ["--verdict-json", "--markdown"])
def test_cli_compare_refuses_an_output_place_that_cannot_be_written(tmp_path, capsys, option):
    ref = write(tmp_path, "ref.json", run([bench("a", 10.0)]))
    plain = tmp_path / "plain_file"
    plain.write_text("x")  # nothing can be created under a file, even by root
    args = ["--verdict-json", str(tmp_path / "v.json"), "--markdown", str(tmp_path / "v.md")]
    args[args.index(option) + 1] = str(plain / "sub" / "out")
    assert main(["compare", ref, ref, *args]) == 2
    err = capsys.readouterr().err
    assert (
        f"aorta compare: error: {option} {plain / 'sub' / 'out'}: cannot be created: {plain} is a file, not a folder"
        in err
    )
    assert not (tmp_path / "v.json").exists() and not (tmp_path / "v.md").exists()


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077])
def test_atomic_files_get_the_mode_of_a_plain_open(tmp_path, umask):
    old = os.umask(umask)
    try:
        with open(tmp_path / "plain", "w") as fh:
            fh.write("x")
        saved_path, _ = bl.save_baseline(run([bench("a", 10.0)]), tmp_path, "b", {})
        bl.write_json_atomic(tmp_path / "v.json", {"x": 1})
    finally:
        os.umask(old)
    want = (tmp_path / "plain").stat().st_mode & 0o777
    assert want == 0o666 & ~umask
    assert saved_path.stat().st_mode & 0o777 == want and (tmp_path / "v.json").stat().st_mode & 0o777 == want


def test_cli_compare_writes_its_verdict_beside_the_candidate_not_into_the_working_folder(
    tmp_path, monkeypatch
):
    runs = tmp_path / "runs"
    runs.mkdir()
    ref = write(runs, "ref.json", run([bench("a", 10.0)]))
    cand = write(runs, "new.json", run([bench("a", 10.0)]))
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["compare", ref, cand]) == EXIT_INCONCLUSIVE
    assert json.loads((runs / "new.verdict.json").read_text())["exit_code"] == EXIT_INCONCLUSIVE
    assert list(elsewhere.iterdir()) == []  # nothing in reports/ of wherever the command ran


def test_one_slower_figure_alone_is_a_regression():
    ref, cand = multi("a", BASE), multi("a", SLOW, seed=10)
    for doc in (ref, cand):
        for b in doc["benchmarks"]:
            del b["extra_info"]["metrics"]
        for entry in doc["aorta_runs"]:
            for figs in entry["benchmarks"].values():
                figs.pop("tflops", None)
    comp = compare_runs(ref, cand)
    assert names(comp.verdicts) == [("a", "device_ms", SLOWER)]
    assert comp.exit_code == EXIT_REGRESSION


@pytest.mark.parametrize("value", ["0", "0%", "lots"])
def test_cli_max_mde_must_be_a_ratio_above_zero(tmp_path, capsys, value):
    ref = write(tmp_path, "ref.json", run([bench("a", 10.0)]))
    with pytest.raises(SystemExit) as exc:
        main(["compare", ref, ref, "--max-mde", value])
    assert exc.value.code == 2 and f"--max-mde={value!r}" in capsys.readouterr().err


def test_a_figure_measured_once_per_run_is_the_runs_figure_not_too_few_samples():
    """A stage figure of the one labelled round (one sample per run) is judged against the between-run
    noise: a +8% move over runs that differ by about 0.3% is SLOWER, an unmoved one SAME; never refused
    as "too few samples" as a per-round figure with one round would be."""

    def once(value: float, seed: int) -> dict:
        b = bench("a", 10.0, seed=seed, metrics=False)
        b["extra_info"]["metrics"] = {
            "stage_ms": {"value": value, "unit": "ms", "higher_is_better": False, "samples": [value]}
        }
        return run([b])

    ref = bl.combine_runs([once(v, i) for i, v in enumerate((2.0, 2.006, 1.994, 2.003))], list("abcd"))
    same = bl.combine_runs([once(v, 10 + i) for i, v in enumerate((2.004, 1.997, 2.001))], list("xyz"))
    slower = bl.combine_runs(
        [once(v * 1.08, 20 + i) for i, v in enumerate((2.004, 1.997, 2.001))], list("xyz")
    )

    def stage(comp):
        return next(v for v in comp.verdicts if v.metric == "stage_ms")

    assert stage(compare_runs(ref, same)).outcome == SAME
    v = stage(compare_runs(ref, slower))
    assert v.outcome == SLOWER and (v.ref_runs, v.cand_runs) == (4, 3)
    assert 0.075 < (v.change_ratio or 0) < 0.085


@pytest.mark.parametrize("from_pass, outcome", [(True, SLOWER), (False, UNSURE)])
def test_a_figure_of_a_two_round_kernel_pass_is_the_runs_figure_not_too_few_samples(from_pass, outcome):
    """A gate's runs profile 2 kernel-pass rounds (GATE_KERNEL_PASS_ROUNDS): the figures of that pass
    (``from_pass``: hetero_kernels' tiny-kernel latency, GEMM TFLOP/s, convoy slowdown) are each run's median of
    its two rounds, judged against the between-run noise: +8% over runs that differ by about 0.3% is SLOWER.
    The same two samples from timed rounds (not a pass) are a run cut short: too few samples, UNSURE (on an H200
    A/A, all 8 such figures of p0 ended UNSURE "too few samples: 2 round(s)" before they were marked)."""

    def two(value: float, seed: int) -> dict:
        b = bench("a", 10.0, seed=seed, metrics=False)
        m = {
            "value": value,
            "unit": "us",
            "higher_is_better": False,
            "samples": [value * 0.999, value * 1.001],
        }
        b["extra_info"]["metrics"] = {"tiny_us": {**m, **({"from_pass": True} if from_pass else {})}}
        return run([b])

    ref = bl.combine_runs([two(v, i) for i, v in enumerate((2.0, 2.006, 1.994, 2.003))], list("abcd"))
    slower = bl.combine_runs(
        [two(v * 1.08, 20 + i) for i, v in enumerate((2.004, 1.997, 2.001))], list("xyz")
    )
    v = next(v for v in compare_runs(ref, slower).verdicts if v.metric == "tiny_us")
    assert v.outcome == outcome
    if outcome == UNSURE:
        assert "too few samples: 2 round(s)" in v.reason
