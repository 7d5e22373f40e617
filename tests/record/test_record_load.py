"""Reading a saved run (aorta/record/load.py): every problem is refused with one sentence naming the file,
the field, the value and what is allowed, word for word as the user reads it; every value that is allowed
passes, at its bound too (a time of 0 is a time; a metric sample may be negative: a saving)."""

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from aorta.record import RecordError, check_run, check_samples, load_run
from aorta.record.load import _kind, read_json_file

W = "runs/candidate.json"  # where the run came from, as the caller names it


def _bench(name="t", **extra) -> dict:
    return {
        "name": name,
        "fullname": f"tests/b.py::{name}",
        "stats": {"data": [0.002, 0.001]},
        "extra_info": {"aorta_schema": 3, **extra},
    }


def _run(*benchmarks) -> dict:
    return {"machine_info": {"aorta": {"backend": "cuda"}}, "benchmarks": list(benchmarks)}


def _refused(fn, *args) -> str:
    with pytest.raises(RecordError) as info:
        fn(*args)
    return str(info.value)


# ------------------------------------------------------------------------------ the file
def test_a_file_that_is_missing_a_folder_empty_or_not_json_is_refused_naming_it(tmp_path):
    p = tmp_path / "run.json"
    assert _refused(load_run, p) == f"{p}: no such file"
    assert _refused(load_run, tmp_path) == f"{tmp_path}: is a folder, not a pytest-benchmark JSON file"
    p.write_text(" \n\t")
    assert _refused(load_run, p) == f"{p}: is empty (an interrupted write? aorta itself writes atomically)"
    p.write_text('{"benchmarks": [')
    assert _refused(load_run, p) == (
        f"{p}: is not valid JSON (truncated or not a benchmark file): "
        "Expecting value: line 1 column 17 (char 16)"
    )
    p.write_bytes(b'{"name": "\xff"}')
    assert re.fullmatch(
        re.escape(f"{p}: cannot be read: ") + r"'utf-8' codec can't decode byte 0xff in position 10: .*",
        _refused(load_run, str(p)),  # a str path as well as a Path
    )


def test_a_readable_run_is_returned_as_read(tmp_path):
    run = _run(_bench("a", device_ms_per_iteration=[0.0, 1.5]))
    (tmp_path / "run.json").write_text(json.dumps(run))
    assert load_run(tmp_path / "run.json") == run
    assert read_json_file(tmp_path / "run.json") == run


def test_a_run_is_read_as_utf8_whatever_the_machine_s_locale(tmp_path):
    """A run saved on one machine reads the same on another: under the C locale without UTF-8 mode (the
    locale's encoding is ASCII there) a benchmark name with "µ" reads as written."""
    import aorta

    run = _run(_bench("latency_µs"))
    (tmp_path / "run.json").write_text(json.dumps(run, ensure_ascii=False), encoding="utf-8")
    assert load_run(tmp_path / "run.json") == run  # here, and in a process whose locale is ASCII:
    env = {
        **os.environ,
        "LC_ALL": "C",
        "PYTHONUTF8": "0",
        "PYTHONCOERCECLOCALE": "0",
        "PYTHONPATH": str(Path(aorta.__file__).parents[1]),
    }
    code = (
        "import sys, locale; from aorta.record import load_run; "
        "print(locale.getpreferredencoding(False), ascii(load_run(sys.argv[1])['benchmarks'][0]['name']))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "run.json")], env=env, capture_output=True, text=True
    )
    assert (out.returncode, out.stdout) == (0, "ANSI_X3.4-1968 'latency_\\xb5s'\n"), out.stderr


# ------------------------------------------------------------------------------ the run
def test_a_document_that_is_not_a_pytest_benchmark_run_is_refused():
    for doc in ([], {"benchmarks": {}}, {"machine_info": {}}):
        assert _refused(check_run, doc, W) == f"{W}: not a pytest-benchmark JSON file (no 'benchmarks' list)"


def test_a_run_not_written_by_aorta_is_refused_saying_how_to_save_one():
    message = (
        f"{W}: not written by aorta (no machine_info['aorta']); save runs with aorta's pytest plugin "
        "(--aorta-save-baseline or --benchmark-json)"
    )
    for machine_info in (None, [], {}, {"aorta": "cuda"}, {"aorta": None}):
        assert _refused(check_run, {"machine_info": machine_info, "benchmarks": [_bench()]}, W) == message


def test_a_benchmark_without_fullname_is_refused_by_its_position():
    run = _run(_bench("a"), {"name": "b", "extra_info": {"aorta_schema": 3}}, _bench("c"))
    assert _refused(check_run, run, W) == f"{W}: benchmark #1 has no 'fullname'"
    assert _refused(check_run, _run(_bench("a"), ["not", "a", "benchmark"]), W) == (
        f"{W}: benchmark #1 has no 'fullname'"
    )


def test_a_run_of_another_tool_and_an_empty_run_are_refused():
    other = {"name": "o", "fullname": "o", "extra_info": {"workload": "x"}}
    no_extra = {"name": "n", "fullname": "n", "extra_info": None}
    assert _refused(check_run, _run(other, no_extra), W) == (
        f"{W}: written by another tool: no benchmark has aorta's extra_info (extra_info['aorta_schema'])"
    )
    assert _refused(check_run, _run(), W) == f"{W}: holds no benchmarks"
    check_run(_run(other, _bench("ours")), W)  # one of aorta's is enough; the other tool's are not read


@pytest.mark.parametrize("schema", [0, 4, "3", None])
def test_a_schema_this_aorta_cannot_read_is_refused_naming_the_benchmark_and_the_readable_ones(schema):
    run = _run(_bench("a"), _bench("b"))
    run["benchmarks"][1]["extra_info"]["aorta_schema"] = schema
    assert _refused(check_run, run, W) == (
        f"{W}: benchmark 'b' has aorta_schema {schema!r}; this aorta reads 1, 2, 3 (a newer file? update aorta)"
    )


# ------------------------------------------------------------------------------ the samples
B1 = "benchmarks[1]"  # the second benchmark: the index is its own, not the first's


@pytest.mark.parametrize(
    "stats_data, message",
    [
        ("0.1", "is a string '0.1', expected a list of numbers, one per round"),
        ({"a": 1}, "is a mapping, expected a list of numbers, one per round"),
        ((0.1,), None),  # a tuple is read from Python, never from JSON: not a list
        ([0.001, True], "[1]: true, expected a number"),
        ([0.001, None], "[1]: null, expected a number"),
        ([0.001, "2"], "[1]: a string '2', expected a number"),
        ([0.001, [2.0]], "[1]: a list, expected a number"),
        ([0.001, 0.002, math.nan], "[2]: NaN, expected a finite number"),
        ([math.inf], "[0]: Infinity, expected a finite number"),
        ([0.001, -1e-9], "[1]: -1e-09, a time cannot be negative"),
        ([0.001, -2], "[1]: -2, a time cannot be negative"),
    ],
)
def test_a_round_time_that_is_not_a_finite_non_negative_number_is_refused_naming_file_field_and_value(
    stats_data, message
):
    benches = [_bench("a"), _bench("b")]
    benches[1]["stats"]["data"] = stats_data
    if message is None:
        message = "is a list, expected a list of numbers, one per round"
    sep = "" if message.startswith("[") else ": "
    assert _refused(check_samples, benches, W) == f"{W}: {B1}.stats.data{sep}{message}"
    benches[1]["stats"]["data"] = [0.001]
    benches[1]["extra_info"]["device_ms_per_iteration"] = stats_data
    assert (
        _refused(check_samples, benches, W) == f"{W}: {B1}.extra_info.device_ms_per_iteration{sep}{message}"
    )


def test_times_at_zero_ints_and_missing_lists_pass():
    benches = [
        _bench("a", device_ms_per_iteration=[0, 0.0, -0.0, 3]),
        {
            "name": "b",
            "fullname": "b",
            "stats": {"data": None},
            "extra_info": {"device_ms_per_iteration": None},
        },
        {"name": "c", "fullname": "c", "stats": None, "extra_info": ["not read"]},
        "not a benchmark: skipped here, refused by check_run",
    ]
    benches[0]["stats"]["data"] = [0, 0.0]
    check_samples(benches, W)


def test_metrics_must_be_a_mapping_of_name_to_a_mapping():
    shape = "{value, unit, higher_is_better, samples}"
    for metrics, kind in (([1.0], "a list"), ("m", "a string 'm'"), (3, "3")):
        benches = [_bench("a"), _bench("b", metrics=metrics)]
        assert _refused(check_samples, benches, W) == (
            f"{W}: {B1}.extra_info.metrics: is {kind}, expected a mapping of metric name -> {shape}"
        )
    benches = [_bench("a", metrics={"ok": {"value": 1.0}, "step_ms": [1.0]})]
    assert _refused(check_samples, benches, W) == (
        f"{W}: benchmarks[0].extra_info.metrics.step_ms: is a list, expected a mapping {shape}"
    )
    check_samples([_bench("a", metrics=None), _bench("b", metrics={})], W)


@pytest.mark.parametrize(
    "value, kind",
    [(True, "true"), ("1.5", "a string '1.5'"), (math.nan, "NaN"), (-math.inf, "-Infinity"), ([1], "a list")],
)
def test_a_metric_value_must_be_a_finite_number_or_null(value, kind):
    benches = [_bench("a", metrics={"m": {"value": 1.0}, "step_ms": {"value": value, "samples": [1.0]}})]
    assert _refused(check_samples, benches, W) == (
        f"{W}: benchmarks[0].extra_info.metrics.step_ms.value: {kind}, expected a finite number or null"
    )


def test_a_metric_value_may_be_null_an_int_or_negative_and_its_samples_negative():
    metrics = {
        "unavailable": {"value": None},
        "count": {"value": 3, "samples": None},
        "saving_ms": {"value": -0.5, "samples": [-0.5, -1, 0.25]},  # a saving: metrics may be negative
    }
    check_samples([_bench("a", metrics=metrics)], W)


def test_metric_samples_must_be_a_list_of_finite_numbers():
    def refused(samples):
        return _refused(check_samples, [_bench("a", metrics={"m": {"value": 1.0, "samples": samples}})], W)

    at = f"{W}: benchmarks[0].extra_info.metrics.m.samples"
    assert refused(1.0) == f"{at}: is 1.0, expected a list of numbers, one per round"
    assert refused([1.0, False]) == f"{at}[1]: false, expected a number"
    assert refused([1.0, -math.inf]) == f"{at}[1]: -Infinity, expected a finite number"


def test_a_value_is_named_as_its_json_reads_cut_at_40_characters():
    assert _kind("x" * 50) == "a string " + repr("x" * 40)
    assert _kind({"a": 1}) == "a mapping"
    assert (_kind([1]), _kind((1,))) == ("a list", "a list")
    assert (_kind(None), _kind(True), _kind(1.5), _kind(math.nan)) == ("null", "true", "1.5", "NaN")
    assert _kind(0.1234567890123456789 * 10**300) == "1.2345678901234568e+299"
    assert _kind(10**50) == "1" + "0" * 39  # cut at 40 characters
    assert _kind(object) == "\"<class 'object'>\""  # anything else: its str(), quoted as JSON


def test_a_benchmark_that_is_not_read_does_not_stop_the_check_of_the_next():
    """A non-mapping benchmark (refused by check_run) and one with a non-mapping extra_info (another
    tool's) are skipped, and the benchmarks after them are still checked."""
    for skipped in ("not a benchmark", {"name": "o", "fullname": "o", "extra_info": ["x"]}):
        bad = _bench("b", device_ms_per_iteration=[1.0, -3.0])
        assert _refused(check_samples, [skipped, bad], W) == (
            f"{W}: benchmarks[1].extra_info.device_ms_per_iteration[1]: -3.0, a time cannot be negative"
        )
