"""Chrome traces: recorded stream intervals -> trace events, --aorta-trace-dir, and `aorta trace merge`."""

import gzip
import json
import shutil
from pathlib import Path

import pytest

from aorta.cli import main
from aorta.report import ReportInputError, trace_merge
from aorta.report.chrome_trace import round_events

pytest_plugins = ["pytester"]

DATA = Path(__file__).parents[1] / "data" / "report"
RANK0, RANK1 = DATA / "traces" / "rank0.pt.trace.json", DATA / "traces" / "rank1.pt.trace.json"


def test_rounds_are_laid_end_to_end_with_one_thread_per_stream():
    events = round_events(
        [2.0, 3.0], [{0: [(0.0, 1.5)], 1: [(0.5, 2.0)]}, {0: [(0.25, 1.0), (1.0, 3.0)]}], process_name="bench"
    )
    work = [(e["tid"], e["ts"], e["dur"]) for e in events if e.get("cat") == "stream"]
    # round 1 starts where round 0 ended (2 ms = 2000 us); ts and dur in microseconds
    assert work == [(1, 0.0, 1500.0), (2, 500.0, 1500.0), (1, 2250.0, 750.0), (1, 3000.0, 2000.0)]
    rounds = [(e["ts"], e["dur"]) for e in events if e.get("cat") == "round"]
    assert rounds == [(0.0, 2000.0), (2000.0, 3000.0)]
    names = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert names == {0: "rounds", 1: "stream 0", 2: "stream 1"}


def test_aorta_trace_dir_writes_one_trace_per_benchmark(pytester):
    pytester.makepyfile(
        test_gemm="""
        from aorta.hw_queue.workloads.large_gemm_only import LargeGemmOnly

        def test_gemm(hw_queue, streams):
            hw_queue(LargeGemmOnly, streams)

        def test_plain():
            pass
    """
    )
    out = pytester.path / "traces"
    result = pytester.runpytest(
        "--aorta-streams=1,2",
        "--aorta-rounds=2",
        "--aorta-warmup=0",
        "--aorta-device=cpu",
        f"--aorta-trace-dir={out}",
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(passed=3)
    files = sorted(p.name for p in out.iterdir())
    assert files == ["test_gemm_streams1.trace.json", "test_gemm_streams2.trace.json"]
    doc = json.loads((out / "test_gemm_streams2.trace.json").read_text())
    rounds = [e for e in doc["traceEvents"] if e.get("cat") == "round"]
    streams = {e["tid"] for e in doc["traceEvents"] if e.get("cat") == "stream"}
    # CPU: rounds only; the stream lanes come from kernel timestamps, which only a GPU records
    assert len(rounds) == 2 and streams == set()
    assert doc["otherData"]["source"].startswith("aorta timing loop")


def test_aorta_trace_dir_refuses_a_file(pytester):
    pytester.makefile(".txt", notadir="x")
    result = pytester.runpytest("--aorta-trace-dir=notadir.txt")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--aorta-trace-dir notadir.txt: exists and is not a folder*"])


def test_merge_makes_one_process_per_rank_named_rank_n():
    merged = trace_merge.merge(trace_merge.load_rank_traces([RANK1, RANK0]))
    names = {e["pid"]: e["args"]["name"] for e in merged["traceEvents"] if e["name"] == "process_name"}
    assert names == {0: "rank 0", 1: "rank 1"}
    threads = {(e["pid"], e["args"]["name"]) for e in merged["traceEvents"] if e["name"] == "thread_name"}
    assert (0, "GPU 0 / stream 20") in threads and (1, "GPU 1 / stream 7") in threads
    kernels = [e for e in merged["traceEvents"] if e.get("cat") == "kernel"]
    assert {e["pid"] for e in kernels} == {0, 1} and len(kernels) == 8


def test_first_step_alignment_puts_the_first_common_step_at_zero_on_every_rank():
    merged = trace_merge.merge(trace_merge.load_rank_traces([RANK0, RANK1]), align="first-step")
    step1 = {e["pid"]: e["ts"] for e in merged["traceEvents"] if e.get("name") == "ProfilerStep#1"}
    assert step1 == {0: pytest.approx(0.0), 1: pytest.approx(0.0)}
    first_kernel = {}
    for e in merged["traceEvents"]:
        if e.get("cat") == "kernel":
            first_kernel[e["pid"]] = min(first_kernel.get(e["pid"], 1e18), e["ts"])
    assert first_kernel == {0: pytest.approx(200.0), 1: pytest.approx(200.0)}  # kernels 200 us into the step
    assert merged["otherData"]["aorta_merge"]["alignment"].startswith("first-step: start of ProfilerStep#1")


def test_base_time_alignment_keeps_the_true_skew_between_ranks():
    traces = trace_merge.load_rank_traces([RANK0, RANK1])
    raw = {t.rank: next(e["ts"] for e in t.events if e.get("name") == "ProfilerStep#1") for t in traces}
    merged = trace_merge.merge(traces, align="auto")
    step1 = {e["pid"]: e["ts"] for e in merged["traceEvents"] if e.get("name") == "ProfilerStep#1"}
    # both traces share baseTimeNanoseconds, so the skew between ranks is the raw ts difference
    assert step1[1] - step1[0] == pytest.approx(raw[1] - raw[0])
    assert min(e["ts"] for e in merged["traceEvents"] if e.get("ph") == "X") == pytest.approx(0.0)


def test_asymmetry_flags_the_rank_that_differs_from_the_median(tmp_path):
    # three ranks: two copies of rank 0 and rank 1, whose all-gathers take 150 us against 100 us
    copy = json.loads(RANK0.read_text())
    copy["distributedInfo"]["rank"] = 2
    (tmp_path / "rank2.json").write_text(json.dumps(copy))
    diag = trace_merge.asymmetry(trace_merge.load_rank_traces([RANK0, RANK1, tmp_path / "rank2.json"]))
    by_rank = {r["rank"]: r for r in diag["ranks"]}
    assert by_rank[0]["comm_ms"] == pytest.approx(2 * 0.100) and by_rank[1]["comm_ms"] == pytest.approx(
        2 * 0.150
    )
    assert by_rank[0]["kernel_count"] == 4 and by_rank[0]["comm_kernel_count"] == 2
    assert 1 in diag["flagged_ranks"] and 0 not in diag["flagged_ranks"] and 2 not in diag["flagged_ranks"]
    assert any(f.startswith("comm_ms +50%") for f in by_rank[1]["flags"])


def test_trace_merge_cli_writes_the_merged_trace_and_the_rank_diagnostic(tmp_path, capsys):
    gz = tmp_path / "rank1.pt.trace.json.gz"
    gz.write_bytes(gzip.compress(RANK1.read_bytes()))
    out = tmp_path / "merged.json"
    assert main(["trace", "merge", str(RANK0), str(gz), "--output", str(out), "--threshold", "0.2"]) == 0
    printed = capsys.readouterr().out
    assert "rank" in printed and "threshold 20%" in printed
    merged = json.loads(out.read_text())
    assert {e["pid"] for e in merged["traceEvents"]} == {0, 1}
    diag = json.loads((tmp_path / "merged.ranks.json").read_text())
    assert diag["threshold_ratio"] == 0.2 and [r["rank"] for r in diag["ranks"]] == [0, 1]


def test_rank_comes_from_the_file_name_when_the_trace_does_not_say(tmp_path):
    for r, src in ((3, RANK0), (5, RANK1)):
        doc = json.loads(src.read_text())
        del doc["distributedInfo"]
        (tmp_path / f"trace_rank_{r}.json").write_text(json.dumps(doc))
    traces = trace_merge.load_rank_traces([tmp_path / "trace_rank_5.json", tmp_path / "trace_rank_3.json"])
    assert [t.rank for t in traces] == [3, 5]


@pytest.mark.parametrize(
    "content, message",
    [
        (b"not json", "not a Chrome trace JSON file"),
        (b'{"foo": []}', "no 'traceEvents' list"),
        (b'{"traceEvents": [{"ph": "M", "name": "process_name"}]}', "no complete ('X') events"),
    ],
)
def test_foreign_traces_exit_2_naming_the_file(tmp_path, capsys, content, message):
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    out = tmp_path / "merged.json"
    assert main(["trace", "merge", str(RANK0), str(bad), "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and str(bad) in err
    assert not out.exists()


def test_the_same_rank_twice_is_refused(tmp_path):
    shutil.copy(RANK0, tmp_path / "again.json")
    with pytest.raises(ReportInputError, match="rank 0 again"):
        trace_merge.load_rank_traces([RANK0, tmp_path / "again.json"])


def test_flow_ids_of_different_ranks_never_collide():
    flows = [
        {"ph": "s", "id": 7, "name": "ac2g", "pid": 0, "tid": 1, "ts": 1.0, "cat": "ac2g"},
        {"ph": "X", "name": "k", "cat": "kernel", "pid": 0, "tid": 7, "ts": 2.0, "dur": 1.0},
    ]
    traces = [
        trace_merge.RankTrace(r, Path(f"rank{r}.json"), {"traceEvents": [dict(e) for e in flows]})
        for r in (0, 1)
    ]
    merged = trace_merge.merge(traces, align="first-step")
    ids = [e["id"] for e in merged["traceEvents"] if e.get("ph") == "s"]
    assert len(set(ids)) == 2 and all(isinstance(i, int) for i in ids)


def test_aorta_trace_dir_that_cannot_be_created_is_refused_before_any_test(pytester):
    """Issue 24, case 8: refused at start-up (exit 4), not as an error at the teardown of every test."""
    pytester.makefile(".txt", plain="x")
    pytester.makepyfile("def test_plain():\n    pass\n")
    result = pytester.runpytest("--aorta-trace-dir=plain.txt/traces", "-p", "no:cacheprovider")
    assert result.ret == 4
    result.stderr.fnmatch_lines(
        ["*--aorta-trace-dir plain.txt/traces: cannot be created: plain.txt is a file, not a folder*"]
    )
    assert "test_plain" not in result.stdout.str() and "passed" not in result.stdout.str()
