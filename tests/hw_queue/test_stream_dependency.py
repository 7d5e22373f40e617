"""stream_dependency on the CPU: its dependency check, its parameters and option, its figures through the runner
(the pure patterns and arithmetic: tests/hw_queue/test_stream_dependencies.py)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aorta.hw_queue.parts import stream_dependencies as deps
from aorta.hw_queue.runner import check_against_one_stream, run_workload
from aorta.hw_queue.workload import WorkloadCheckError
from aorta.hw_queue.workloads.stream_dependency import StreamDependency
from aorta.options import parse_extra_deps
from aorta.record.metric import Metric
from aorta.stats import median
from aorta.timing import TimingPlan

REPO = Path(__file__).resolve().parents[2]
PLAN = TimingPlan(warmup_rounds=0, rounds=3, iterations_per_round=1)  # the `cpu` fixture: tests/conftest.py


# ------------------------------------------------------------------------------------ the workload's checks
@pytest.mark.parametrize("pattern", ["chain", "fan"])
@pytest.mark.parametrize("dependencies", ["events", "none"])
@pytest.mark.parametrize("n", [1, 2, 4])
def test_every_kernel_writes_its_known_value(cpu, pattern, dependencies, n):
    w = StreamDependency(cpu, n, size="smoke", pattern=pattern, dependencies=dependencies)
    w.setup()
    check_against_one_stream(cpu, w, w.make_streams())
    expected = deps.expected_values(w.plan, n)
    assert w.result().tolist() == pytest.approx(expected, rel=1e-6)
    if pattern == "chain":
        assert expected[:3] == [1.5, 2.5, 3.5]


class DropsOneWait(StreamDependency):
    """A mutant: one kernel launches without waiting for its producer's event."""

    dropped: tuple[int, int] = (3, 4)

    def _wait(self, stream, event, producer, consumer):
        if (producer, consumer) != self.dropped:
            super()._wait(stream, event, producer, consumer)


def test_a_workload_that_drops_a_wait_fails_the_check(cpu):
    w = DropsOneWait(cpu, 3, size="smoke", pattern="chain")
    w.setup()
    with pytest.raises(WorkloadCheckError, match="kernel 4 \\(chain, stream 1\\) did not wait on kernel 3"):
        check_against_one_stream(cpu, w, w.make_streams())


def test_a_fan_whose_join_skips_one_fan_fails_the_check(cpu):
    class JoinSkipsLastFan(DropsOneWait):
        dropped = (3, 4)  # fan_plan(3, .): fan on stream 2 is kernel 3, the join kernel 4

    w = JoinSkipsLastFan(cpu, 3, size="smoke", pattern="fan")
    w.setup()
    with pytest.raises(WorkloadCheckError, match="kernel 4 \\(join, stream 0\\) did not wait on kernel 3"):
        check_against_one_stream(cpu, w, w.make_streams())


def test_a_plan_edited_after_setup_cannot_excuse_a_missing_wait(cpu):
    w = StreamDependency(cpu, 2, size="smoke", pattern="chain")
    w.setup()
    w.plan = [deps.Kernel(k.index, k.stream, k.role, k.level, ()) for k in w.plan]  # every wait gone
    with pytest.raises(WorkloadCheckError, match="15 of 15 waits missing"):  # smoke: 16 kernels on 2 streams
        check_against_one_stream(cpu, w, w.make_streams())


def test_a_kernel_run_before_its_producer_gives_a_wrong_result(cpu):
    """Out of order on a device: in the multi-stream run kernel 5 runs before kernel 4, every wait issued. It
    reads the poison the check left in kernel 4's output, and the values check fails (not the waits check)."""

    class OutOfOrder(StreamDependency):
        def step(self, rec):
            if rec.stream(0) is rec.stream(rec.n_streams - 1):  # the one-stream reference runs in order
                return super().step(rec)
            ops = self._ops
            self._ops = [*ops[:4], ops[5], ops[4], *ops[6:]]
            try:
                super().step(rec)
            finally:
                self._ops = ops

    w = OutOfOrder(cpu, 2, size="smoke", pattern="chain")
    w.setup()
    with pytest.raises(WorkloadCheckError, match="non-finite"):
        check_against_one_stream(cpu, w, w.make_streams())


def test_relay_streams_carry_the_extra_dependency_and_the_check_still_holds(cpu):
    w = StreamDependency(cpu, 2, size="smoke", pattern="fan", extra_hops=3)
    streams = w.make_streams()
    assert len(streams) == 5 and len({id(s) for s in streams}) == 5  # two work streams, three relays
    w.setup()
    check_against_one_stream(cpu, w, streams)
    assert w.info()["extra_hops"] == 3 and w.info()["relay_streams"] == 3
    # each relay stream runs one relay kernel per event waited on (3 levels, each a root and 2 fans: 9)
    work = w.expected_work().streams
    assert {i: s.other for i, s in work.items()} == {0: 9, 1: 3, 2: 9, 3: 9, 4: 9}


def test_declared_work_per_stream(cpu):
    chain = StreamDependency(cpu, 4, size="smoke", pattern="chain").expected_work()
    assert {i: w.other for i, w in chain.streams.items()} == {0: 4, 1: 4, 2: 4, 3: 4}
    fan = StreamDependency(cpu, 3, size="smoke", pattern="fan").expected_work()
    assert {i: w.other for i, w in fan.streams.items()} == {0: 9, 1: 3, 2: 3}  # root, fan, join a level on 0


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"pattern": "ring"}, "stream_dependency: pattern must be one of ('chain', 'fan'), got 'ring'"),
        ({"mode": "replay"}, "stream_dependency: mode must be one of ('eager', 'graph'), got 'replay'"),
        ({"dependencies": "some"}, "dependencies must be one of ('events', 'none'), got 'some'"),
        ({"extra_hops": 9}, "stream_dependency: extra_hops must be 0 to 8, got 9"),
        ({"extra_hops": -1}, "extra_hops must be 0 to 8, got -1"),
        ({"extra_hops": 1, "dependencies": "none"}, "extra_hops=1 needs dependencies='events'"),
        ({"kernels": 0}, "stream_dependency: kernels must be >= 1, got 0"),
        ({"levels": -2}, "stream_dependency: levels must be >= 1, got -2"),
    ],
)
def test_bad_parameters_are_refused_before_any_work(cpu, kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        StreamDependency(cpu, 2, size="smoke", **kwargs)


@pytest.mark.parametrize(
    "text,message",
    [
        ("9", "--aorta-extra-deps='9': 9 is out of range; allowed 0 to 8"),
        ("-1", "out of range"),
        ("one", "'one' is not an integer"),
        ("1,2", "give one integer from 0 to 8"),
    ],
)
def test_extra_deps_option_rejects_bad_values(text, message):
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        parse_extra_deps(text)


def test_extra_deps_option_accepts_its_range():
    assert [parse_extra_deps(t) for t in ("0", "1", "8")] == [0, 1, 8]


# ------------------------------------------------------------------------------------ figures through the runner
def test_headline_against_the_reference_run(cpu):
    ref_w = StreamDependency(cpu, 1, size="smoke", pattern="chain", dependencies="none")
    ref = run_workload(cpu, ref_w, ref_w.make_streams(), PLAN)
    assert "added_us_per_dependent_kernel" in ref.record.unavailable  # the reference has no headline itself
    w = StreamDependency(cpu, 3, size="smoke", pattern="chain")
    res = run_workload(cpu, w, w.make_streams(), PLAN, reference_run=ref)
    m = res.record.metrics
    head = m["added_us_per_dependent_kernel"]
    assert res.record.headline() is head and "added_us_per_dependent_kernel" not in res.record.unavailable
    # the reference is a chain of 16 on one stream; this one 15 kernels on 3 streams, 14 of them dependent
    ref_per_kernel = ref.record.metrics["us_per_kernel"].value
    assert ref_per_kernel == pytest.approx(median(ref.record.device_ms_per_iteration) * 1e3 / 16)
    expected = tuple((us * 15 - 15 * ref_per_kernel) / 14 for us in m["us_per_kernel"].samples)
    assert head.samples == pytest.approx(expected)
    assert len(head.samples) == 3 and head.higher_is_better is False and "reference run" in head.source
    assert m["reference_us_per_kernel"].value == ref_per_kernel
    assert res.extra_info["workload_info"]["dependent_kernels_per_iteration"] == 14  # 15 kernels, 3 streams
    assert res.extra_info["stream_work"]["checks"][0]["ok"]


def test_without_a_reference_the_headline_is_unavailable_with_the_reason(cpu):
    w = StreamDependency(cpu, 2, size="smoke", pattern="fan")
    res = run_workload(cpu, w, w.make_streams(), PLAN)
    assert "added_us_per_dependent_kernel" not in res.record.metrics
    assert "no reference run given" in res.record.unavailable["added_us_per_dependent_kernel"]


def test_reference_metrics_known_answer(cpu):
    w = StreamDependency(cpu, 2, size="smoke", pattern="fan")  # 3 levels of 4 kernels: 12, 6 dependent
    mine = {"us_per_kernel": Metric("us_per_kernel", 50 / 12, "us", False, (50 / 12, 62 / 12, 44 / 12))}
    ref = {"us_per_kernel": Metric("us_per_kernel", 3.0, "us", False, (3.0, 3.25))}  # 36 us for 12 kernels
    (head, reference), why_not = w.reference_metrics(mine, ref)
    assert why_not == {}
    assert head.value == pytest.approx(14.0 / 6) and head.samples == pytest.approx((14 / 6, 26 / 6, 8 / 6))
    assert reference.name == "reference_us_per_kernel" and reference.samples == (3.0, 3.25)


@pytest.mark.slow  # a pytest subprocess over the benchmark file
def test_the_benchmark_runs_on_cpu_with_the_extra_dependency_recorded(tmp_path):
    out = tmp_path / "run.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(REPO / "benchmarks" / "hw_queue" / "test_stream_dependency.py"),
            "--aorta-streams=1,2",
            "--aorta-rounds=3",
            "--aorta-warmup=0",
            "--aorta-extra-deps=1",
            f"--benchmark-json={out}",
            "-p",
            "no:cacheprovider",
            "-q",
        ],
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "4 passed, 4 skipped" in proc.stdout  # graph variants skip on CPU
    benches = json.loads(out.read_text())["benchmarks"]
    assert sorted(b["name"] for b in benches) == [
        "test_stream_dependency[streams1-chain-eager]",
        "test_stream_dependency[streams1-fan-eager]",
        "test_stream_dependency[streams2-chain-eager]",
        "test_stream_dependency[streams2-fan-eager]",
    ]
    for b in benches:
        extra = b["extra_info"]
        head = extra["metrics"][extra["headline_metric"]]
        assert extra["headline_metric"] == "added_us_per_dependent_kernel" and len(head["samples"]) == 3
        assert extra["workload_info"]["extra_hops"] == 1
        assert extra["stream_handles"] is None  # CPU: no hardware streams
        assert extra["stream_work"]["checks"][0]["ok"]
