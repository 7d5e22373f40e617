"""The run record: what a benchmark's extra_info holds, written and read back, old files included."""

import json

import pytest

from aorta.record import SCHEMA_VERSION, BenchRecord, RecordError, load_run, record_of
from aorta.record.metric import Metric


def _record() -> BenchRecord:
    return BenchRecord(
        workload="tiny_kernel_stress",
        backend="cuda",
        timing_method="graph_replay",
        clock="device_events",
        device_ms_per_iteration=[1.0, 1.5],
        headline_metric="us_per_launch",
        unavailable={"per_stream_busy_ms": "graph replay"},
        reading_notes=["host-bound: ..."],
        details={"streams_requested": 4},
    ).add(
        Metric("us_per_launch", 1.2, "us", False, (1.1, 1.3)),
        Metric("speedup_vs_one_stream", 2.0, "x", True, source="one-stream reference run"),
    )


def test_a_record_survives_extra_info_unchanged():
    record = _record()
    extra = record.to_extra_info()
    assert extra["aorta_schema"] == SCHEMA_VERSION == 3
    assert extra["metrics"]["us_per_launch"] == {
        "value": 1.2,
        "unit": "us",
        "higher_is_better": False,
        "samples": [1.1, 1.3],
    }
    assert extra["metrics"]["speedup_vs_one_stream"]["source"] == "one-stream reference run"
    assert extra["streams_requested"] == 4  # kind-specific details sit beside the core fields
    back = BenchRecord.from_extra_info(json.loads(json.dumps(extra)))
    assert back == record
    assert back.headline().value == 1.2


def test_older_entries_load_and_their_declared_noise_floors_are_ignored():
    extra = {
        "aorta_schema": 1,
        "workload": "hetero_kernels",
        "backend": "cuda",
        "timing_method": "events",
        "clock": "device_events",
        "device_ms_per_iteration": [2.0],
        "headline_metric": "tiny_us_per_kernel",
        "metrics": {
            "tiny_us_per_kernel": {"value": 3.0, "unit": "us", "higher_is_better": False, "noise_floor": 0.75}
        },
        "min_effect": {"tiny_us_per_kernel": 0.75},
        "unavailable": {},
        "distinct_streams": 16,
    }
    record = record_of({"extra_info": extra})
    assert record.schema == 1 and record.metrics["tiny_us_per_kernel"].value == 3.0
    assert "noise_floor" not in record.to_extra_info()["metrics"]["tiny_us_per_kernel"]
    assert record.get("distinct_streams") == 16 and "min_effect" not in record.details


def _saved(tmp_path, schema):
    extra = {**_record().to_extra_info(), "aorta_schema": schema}
    run = {
        "machine_info": {"aorta": {"backend": "cuda"}},
        "benchmarks": [{"name": "t", "fullname": "t", "stats": {"data": [0.001]}, "extra_info": extra}],
    }
    path = tmp_path / f"schema{schema}.json"
    path.write_text(json.dumps(run))
    return path


def test_load_run_reads_schemas_1_to_3_and_refuses_a_newer_one_naming_the_file(tmp_path):
    for schema in (1, 2, 3):
        assert load_run(_saved(tmp_path, schema))["benchmarks"][0]["name"] == "t"
    newer = _saved(tmp_path, 4)
    with pytest.raises(
        RecordError, match=rf"{newer}: benchmark 't' has aorta_schema 4; this aorta reads 1, 2, 3"
    ):
        load_run(newer)


def test_the_raw_readers_of_a_pytest_benchmark_entry():
    from aorta.record.bench import BenchRecord, is_aorta_bench, raw_device_ms, raw_metrics, schema_of

    ours = {"extra_info": {"aorta_schema": 3, "metrics": {"m": 1}, "device_ms_per_iteration": [2.0, 1.0]}}
    assert (is_aorta_bench(ours), schema_of(ours), raw_metrics(ours), raw_device_ms(ours)) == (
        True,
        3,
        {"m": 1},
        [2.0, 1.0],
    )
    for other in ({"extra_info": None}, {}, {"extra_info": {"metrics": 1}}):
        assert not is_aorta_bench(other) and schema_of(other) is None and raw_device_ms(other) is None
    assert raw_metrics({"extra_info": None}) is None and schema_of(["not", "a", "mapping"]) is None  # type: ignore[arg-type]
    assert not is_aorta_bench({"extra_info": ["aorta_schema"]})  # a list holding the key is not a record
    rec = (
        BenchRecord("w", "cuda", "events", "device_events", [1.0], "m")
        .mark_unavailable({"a": "why a"})
        .mark_unavailable({"b": "why b"})
    )
    assert rec.unavailable == {"a": "why a", "b": "why b"}


class _Session:
    """pytest-benchmark's session as install_atomic_writer reads it: ``json``, ``save_json`` and ``logger``."""

    def __init__(self, json_path):
        self.json = json_path
        self.logged: list[tuple[str, dict]] = []
        self.logger = self
        self.save_json = lambda doc: None

    def info(self, text, **kw):
        self.logged.append((text, kw))


def test_the_benchmark_json_is_written_whole_or_not_at_all_with_the_reason(tmp_path):
    from aorta.record.benchmark_json import install_atomic_writer

    errors: list[str] = []
    ok = _Session(tmp_path / "run.json")
    assert install_atomic_writer(ok, errors.append) is True
    ok.save_json({"benchmarks": [{"é": 1}]})
    assert (
        tmp_path / "run.json"
    ).read_text() == '{\n    "benchmarks": [\n        {\n            "\\u00e9": 1\n        }\n    ]\n}'
    assert (
        ok.logged == [(f"Wrote benchmark data in: {tmp_path / 'run.json'}", {"purple": True})]
        and errors == []
    )

    (tmp_path / "a_file").write_text("")
    bad = _Session(str(tmp_path / "a_file" / "run.json"))  # a folder that is a file
    assert install_atomic_writer(bad, errors.append) is True
    bad.save_json({})
    assert errors == [
        f"--benchmark-json {tmp_path / 'a_file' / 'run.json'}: NOT written: File exists; "
        "no partial file was left (an earlier file there is unchanged)"
    ]
    assert bad.logged == []

    opened = _Session(None)  # an older pytest-benchmark opened the file while parsing the options
    assert install_atomic_writer(opened, errors.append) is False
    no_writer = _Session(str(tmp_path / "x.json"))
    no_writer.save_json = None  # type: ignore[assignment]
    assert install_atomic_writer(no_writer, errors.append) is False and no_writer.save_json is None


def test_a_sparse_entry_reads_with_empty_defaults_schema_1_and_only_mapping_metrics():
    """What an old or hand-made entry lacks reads as empty (never "None" or a placeholder); a metric that
    is not a mapping is left out; every key beyond the core is kept in details, the core ones are not."""
    record = BenchRecord.from_extra_info(
        {
            "workload": None,
            "metrics": {"step_ms": {"value": 2, "samples": [2, 3]}, "bad": [1.0], 7: {"value": None}},
            "min_effect": {"step_ms": 0.5},
            "reading_notes": None,
            "per_rank": [{"rank": 1}],
        }
    )
    assert (record.workload, record.backend, record.timing_method, record.clock, record.headline_metric) == (
        "",
        "",
        "",
        "",
        "",
    )
    assert (record.device_ms_per_iteration, record.unavailable, record.reading_notes, record.schema) == (
        [],
        {},
        [],
        1,
    )
    assert record.metrics == {
        "step_ms": Metric("step_ms", 2.0, "", True, (2.0, 3.0)),
        "7": Metric("7", None, "", True),
    }
    assert record.details == {"per_rank": [{"rank": 1}]}
    assert record.headline() is None and record.get("per_rank") == [{"rank": 1}] and record.get("x", 5) == 5
    assert BenchRecord.from_extra_info({"aorta_schema": 2, "device_ms_per_iteration": [1, "2.5"]}).schema == 2
    assert BenchRecord.from_extra_info({"device_ms_per_iteration": [1, "2.5"]}).device_ms_per_iteration == [
        1.0,
        2.5,
    ]


def test_record_of_reads_the_entry_s_extra_info_or_an_empty_record():
    assert record_of({"extra_info": {"workload": "w", "aorta_schema": 3}}).workload == "w"
    for entry in ({}, {"extra_info": None}):
        assert record_of(entry) == BenchRecord("", "", "", "", [], "", schema=1)


def test_the_record_s_lists_and_maps_are_copies_in_extra_info():
    record = _record()
    extra = record.to_extra_info()
    extra["device_ms_per_iteration"].append(9.0)
    extra["unavailable"]["x"] = "y"
    extra["reading_notes"].append("z")
    assert record == _record()
    assert list(extra)[:10] == [
        "aorta_schema",
        "workload",
        "backend",
        "timing_method",
        "clock",
        "device_ms_per_iteration",
        "metrics",
        "headline_metric",
        "unavailable",
        "reading_notes",
    ]


def test_a_benchmark_json_write_error_without_an_os_reason_is_named_by_its_message(tmp_path, monkeypatch):
    from aorta.record import benchmark_json as bj

    def gone(path, data):
        raise OSError("the disk went away")

    monkeypatch.setattr(bj, "write_bytes_atomic", gone)
    errors: list[str] = []
    session = _Session(tmp_path / "run.json")
    assert bj.install_atomic_writer(session, errors.append) is True
    session.save_json({})
    assert errors == [
        f"--benchmark-json {tmp_path / 'run.json'}: NOT written: the disk went away; no partial file was left "
        "(an earlier file there is unchanged)"
    ]
    assert session.logged == [] and not (tmp_path / "run.json").exists()


def test_a_session_without_a_json_path_or_a_writer_is_left_as_it_is():
    from aorta.record.benchmark_json import install_atomic_writer

    class NoJson:  # pytest-benchmark without --benchmark-json
        save_json = staticmethod(lambda doc: None)

    class NoWriter:  # a session of another pytest-benchmark version
        json = "run.json"

    errors: list[str] = []
    assert install_atomic_writer(NoJson(), errors.append) is False
    assert install_atomic_writer(NoWriter(), errors.append) is False
    assert not hasattr(NoWriter(), "save_json") and errors == []
