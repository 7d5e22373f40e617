"""Traces as users and tools really hand them over (issue 49): bytes read once (pipes, gzip, a byte-order mark),
Kineto events JSON forbids or no profiler writes, host-only traces, and the JSON streamed at any chunk size; each
case read exactly, or refused in one line naming the file, the place and why, with a non-zero exit."""

from __future__ import annotations

import gzip
import io
import json
from unittest import mock

import amd_traces
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_tiers import examples
from trace_cases import KINETO, MI300X, ROCPD_SAMPLES, piped, refused, rows, write

from aorta.report import trace_figures
from aorta.timeline import trace_json
from aorta.timeline.trace_events import TraceFileError, load_trace


# --------------------------------------------------------------------------- bytes read once
@pytest.mark.parametrize("name", ["hta_mi250_minitoy_train_ROCm6_2_kineto.json.gz", "rocm_aorta"])
def test_a_corrupt_gzip_is_one_line_naming_the_file_not_a_traceback(kineto, tmp_path, capsys, name):
    real = amd_traces.folder() / name
    raw = bytearray(real.read_bytes() if real.is_file() else gzip.compress(kineto))
    raw[200] ^= 0xFF  # one byte flipped inside the deflate stream, within the first 4 KiB it decompresses to
    p = write(tmp_path / "rank0.json.gz", bytes(raw))
    line = refused([str(p)], capsys)
    assert line.startswith(f"{p}: a damaged gzip file (")


def test_a_csv_through_a_pipe_gives_the_figures_of_the_file(kernel_csv, tmp_path):
    (from_file,) = trace_figures.figures([write(tmp_path / "kernel_trace.csv", kernel_csv)])["ranks"]
    (from_pipe,) = trace_figures.figures([piped(kernel_csv)])["ranks"]
    assert from_pipe["kernels"] == from_file["kernels"] == len(rows(kernel_csv)) == 9
    for key in ("steps", "hardware_queues", "records"):
        assert from_pipe[key] == from_file[key], key


def test_a_gzipped_kineto_trace_through_a_pipe_gives_the_figures_of_the_file(kineto):
    (from_file,) = trace_figures.figures([KINETO])["ranks"]
    (from_pipe,) = trace_figures.figures([piped(gzip.compress(kineto))])["ranks"]
    assert from_pipe["steps"] == from_file["steps"] and from_pipe["kernels"] == from_file["kernels"] == 20


def test_a_rocpd_database_through_a_pipe_is_refused_saying_why(capsys):
    if not ROCPD_SAMPLES.is_file():
        pytest.skip(amd_traces.absent(ROCPD_SAMPLES))
    line = refused([piped(ROCPD_SAMPLES.read_bytes())], capsys)
    assert line.endswith(
        ": a rocpd SQLite database through a pipe: SQLite reads a file it can seek in; name the .db file itself"
    )


@pytest.mark.parametrize("name", ["kernel_trace.csv", "trace.json"])
def test_a_utf8_byte_order_mark_is_read_past(kernel_csv, kineto, tmp_path, name):
    data = kernel_csv if name.endswith(".csv") else kineto
    (plain,) = trace_figures.figures([write(tmp_path / name, data)])["ranks"]
    (marked,) = trace_figures.figures([write(tmp_path / f"bom_{name}", b"\xef\xbb\xbf" + data)])["ranks"]
    assert marked["steps"] == plain["steps"] and marked["kernels"] == plain["kernels"]


def test_a_gzipped_csv_is_read_as_the_csv(kernel_csv, tmp_path):
    (plain,) = trace_figures.figures([write(tmp_path / "kernel_trace.csv", kernel_csv)])["ranks"]
    zipped_csv = write(tmp_path / "kernel_trace.csv.gz", gzip.compress(kernel_csv))
    (zipped,) = trace_figures.figures([zipped_csv])["ranks"]
    assert zipped["hardware_queues"] == plain["hardware_queues"] and zipped["steps"] == plain["steps"]


# --------------------------------------------------------------------------- Kineto: values JSON forbids
def test_a_kernel_lasting_infinity_is_refused_naming_the_event(kineto, tmp_path, capsys):
    doc = json.loads(kineto)
    i = next(i for i, e in enumerate(doc["traceEvents"]) if e.get("cat") == "kernel")
    text = json.dumps(doc).replace(f'"dur": {json.dumps(doc["traceEvents"][i]["dur"])}', '"dur": Infinity', 1)
    assert "Infinity" in text
    p = write(tmp_path / "rank0.json", text.encode())
    line = refused([str(p)], capsys)
    assert line.startswith(f"{p}: event ") and "has dur inf: a duration is a number >= 0" in line


@pytest.mark.parametrize(
    "args, why",
    [
        ('"x"', "has args 'x', not an object"),
        ('{"correlation": "7"}', "has args.correlation '7', not an integer"),
    ],
)
def test_a_kernel_with_args_no_profiler_writes_is_refused_naming_the_event(tmp_path, capsys, args, why):
    p = write(
        tmp_path / "t.json",
        b'{"traceEvents": [{"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "ts": 1, "dur": 1, '
        b'"args": {"correlation": 7}}, {"ph": "X", "cat": "kernel", "name": "k", "ts": 5, "dur": 2, "args": '
        + args.encode()
        + b"}]}",
    )
    assert refused([str(p)], capsys) == f"{p}: event 1 (kernel 'k') {why}"


@pytest.mark.parametrize("events", amd_traces.EVENTS)
def test_a_host_only_trace_says_it_holds_launches_but_no_kernels(tmp_path, capsys, events, amd_trace):
    path = amd_trace(MI300X.name, events)
    if not path.is_file():
        pytest.skip(amd_traces.absent(path))
    doc = json.loads(gzip.decompress(path.read_bytes()))
    device = ("kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation")
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("cat") not in device]
    launches = sum(  # host calls that launch one kernel each (the issue counted 2238)
        e.get("cat") in ("cuda_runtime", "cuda_driver") and "LaunchKernel" in e.get("name", "")
        for e in doc["traceEvents"]
    )
    p = write(tmp_path / "host_only.json", json.dumps(doc).encode())
    line = refused([str(p)], capsys)
    assert (
        line.startswith(f"{p}: the trace holds ") and "kernel launches but no kernel, copy or memset" in line
    )
    assert int(line.split("holds ")[1].split()[0]) == launches == 2238


def test_a_trace_with_no_device_work_is_refused_naming_the_file(tmp_path, capsys):
    p = write(
        tmp_path / "rank0.json", b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1}]}'
    )
    assert refused([str(p)], capsys) == f"{p}: the trace holds no device work (no kernel, copy or memset)"


# --------------------------------------------------------------------------- the streamed JSON
@settings(max_examples=examples(60), deadline=None)
@given(
    events=st.lists(
        st.fixed_dictionaries(
            {
                "ph": st.sampled_from("XsfiM"),
                "cat": st.sampled_from(["kernel", "cpu_op", "ac2g", "ü"]),
                "name": st.text(max_size=8),
                "ts": st.integers(0, 10**15),
                "dur": st.floats(0, 1e9),
                "id": st.integers(0, 9),
            }  # fmt: skip
        ),
        max_size=12,
    ),
    chunk=st.integers(1, 64),
    indent=st.sampled_from([None, 0, 2]),
)
def test_the_streamed_json_reads_what_json_load_reads_at_any_chunk_size(events, chunk, indent):
    doc = {"schemaVersion": 1, "traceEvents": events, "deviceProperties": [{"name": "MI300X"}], "n": 1.5e3}
    raw = json.dumps(doc, indent=indent, ensure_ascii=False).encode()
    seen: list = []
    with mock.patch.object(trace_json, "CHUNK_BYTES", chunk):  # values split across chunks, mid-character too
        read = trace_json.read_trace_json(io.BytesIO(raw), lambda i, ev: seen.append(i) is None)
    assert read == json.loads(raw) and seen == list(range(len(events)))


def test_a_trace_with_two_event_lists_is_refused_not_read_half(tmp_path):
    p = write(tmp_path / "t.json", b'{"traceEvents": [], "x": 1, "traceEvents": []}')
    with pytest.raises(
        TraceFileError, match=r"a second 'traceEvents' at line 1 column \d+: one trace, one list"
    ):
        load_trace(p)


@pytest.mark.parametrize("cut", [0.3, 0.7, 0.999])
def test_a_kineto_trace_cut_short_is_refused_naming_where(kineto, tmp_path, cut):
    p = write(tmp_path / "rank0.json", kineto[: int(len(kineto) * cut)])
    with pytest.raises(TraceFileError, match=rf"^{p}: not a Chrome trace JSON file \(.*(cut short|expected)"):
        load_trace(p)


def test_only_the_events_read_are_kept_and_every_one_is_checked(kineto, tmp_path):
    full = load_trace(write(tmp_path / "t.json", kineto))
    kept = load_trace(tmp_path / "t.json", only_read=True)
    assert len(kept["traceEvents"]) < len(full["traceEvents"])
    from aorta.timeline.trace_check import READ_ARGS

    read = lambda e: {**e, "args": {k: v for k, v in e["args"].items() if k in READ_ARGS}}  # noqa: E731
    assert [read(e) for e in full["traceEvents"] if e.get("cat") == "kernel"] == [
        e for e in kept["traceEvents"] if e.get("cat") == "kernel"
    ]
    doc = json.loads(kineto)
    doc["traceEvents"].append({"ph": "X", "cat": "cpu_op", "name": "x", "ts": 1})
    doc["traceEvents"].append(None)  # not read, but still not an event
    with pytest.raises(TraceFileError, match=r"event \d+ is null, not a JSON object"):
        load_trace(write(tmp_path / "bad.json", json.dumps(doc).encode()), only_read=True)


def test_times_on_the_epoch_clock_keep_their_ns_from_the_text():
    from aorta.timeline.trace_json import ns_of, parse_float

    # 1758927066581847.260 µs: a float holds 1758927066581847.25 (its step there is 0.25 µs)
    assert ns_of(parse_float("1758927066581847.260")) == 1_758_927_066_581_847_260
    assert ns_of(parse_float("-1758927066581847.5")) == -1_758_927_066_581_847_500
    assert ns_of(parse_float("1234.567")) == 1_234_567 and ns_of(1234) == 1_234_000
    assert ns_of(parse_float("1e3")) == 1_000_000 and ns_of("12") is None
    assert ns_of(304.6875) is None  # finer than the ns: the figures take the floats as they are


def test_a_trace_read_for_its_figures_keeps_only_the_args_a_figure_reads(tmp_path):
    import json

    from aorta.timeline.trace_events import load_trace

    args = {
        "device": 0,
        "stream": 7,
        "correlation": 1,
        "queued": 0,
        "registers per thread": 32,
        "grid": [1, 1, 1],
    }
    kernel = {
        "ph": "X",
        "cat": "kernel",
        "name": "gemm",
        "pid": 0,
        "tid": 7,
        "ts": 1.0,
        "dur": 1.0,
        "args": args,
    }
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": [kernel]}))
    kept = load_trace(path, only_read=True)["traceEvents"][0]["args"]
    assert kept == {"device": 0, "stream": 7, "correlation": 1, "grid": [1, 1, 1]}
    assert load_trace(path)["traceEvents"][0]["args"] == args  # a merge writes every arg back
