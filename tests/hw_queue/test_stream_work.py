"""The per-stream kernel check (aorta/hw_queue/stream_work.py): each stream's declared work against what ran, from kernel
timestamps (recorded and hand-built traces) and from the CPU launch log, through the real runner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from aorta.device import Device
from aorta.hw_queue import runner
from aorta.hw_queue import stream_work as sw
from aorta.hw_queue.workload import WorkloadCheckError
from aorta.hw_queue.workloads import REGISTRY
from aorta.hw_queue.workloads.hetero_kernels import HeteroKernels
from aorta.hw_queue.workloads.stream_concurrency import StreamConcurrency
from aorta.timeline import kernel_timeline as kt
from aorta.timeline.device_op import DeviceOp
from aorta.timing import TimingPlan

DATA = Path(__file__).parents[1] / "data"
PLAN = TimingPlan(warmup_rounds=0, rounds=2, iterations_per_round=1)


@pytest.fixture(scope="module")
def cpu() -> Device:
    torch.set_num_threads(1)
    return Device.open("cpu")


# ------------------------------------------------------------------------------------------ pure
def test_kernel_names_classify_gemm_spin_and_other_on_both_vendors():
    assert sw.kernel_kind("at::cuda::(anonymous namespace)::spin_kernel(long)") == "spin"
    assert sw.kernel_kind("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64") == "gemm"
    assert sw.kernel_kind("nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NTN") == "gemm"
    assert sw.kernel_kind("Cijk_Ailk_Bljk_BBS_BH_MT256x256x64_MI32x32x8x1_SN_1LDSB1_GRVW8") == "gemm"
    assert sw.kernel_kind("void at::native::vectorized_elementwise_kernel<4, FillFunctor<float>>") == "other"
    assert sw.kernel_kind("Memcpy DtoD (Device -> Device)") == "other"


SPEC = sw.WorkSpec(
    {0: sw.StreamWork(gemm=1), 1: sw.StreamWork(other=3), 2: sw.StreamWork(ops=2)}, placed=("gemm",)
)


def test_a_stream_short_of_its_declared_work_is_named_with_the_counts():
    ok = {0: {"gemm": 2}, 1: {"other": 3}, 2: {"spin": 1, "other": 1}}
    assert sw.stream_shortfalls(SPEC, ok) == []
    assert sw.stream_shortfalls(SPEC, {**ok, 1: {"other": 2}}) == [
        "stream 1: 2 other op(s) per iteration, declared at least 3"
    ]
    missing = sw.stream_shortfalls(SPEC, {0: {"gemm": 1}, 1: {"other": 3}})  # stream 2 ran nothing
    assert missing == ["stream 2: 0 op(s) of any kind per iteration, declared at least 2"]


def test_counts_are_per_iteration_over_k_iterations():
    k3 = {0: {"gemm": 3}, 1: {"other": 9}, 2: {"other": 6}}
    assert sw.stream_shortfalls(SPEC, k3, iterations=3) == []
    short = {**k3, 1: {"other": 8}}  # one tiny op missing in one of three iterations
    assert sw.stream_shortfalls(SPEC, short, iterations=3)[0] == (
        "stream 1: 2.66667 other op(s) per iteration, declared at least 3"
    )


def test_a_placed_kind_on_a_stream_declared_without_it_fails():
    moved = {0: {"gemm": 1}, 1: {"other": 3, "gemm": 1}, 2: {"other": 2}}
    assert sw.stream_shortfalls(SPEC, moved) == [
        "stream 1: 1 gemm op(s) per iteration, declared none (only streams 0 run gemm ops)"
    ]


def test_a_placed_kind_names_every_stream_that_runs_it_or_none():
    two = sw.WorkSpec(
        {0: sw.StreamWork(gemm=1), 1: sw.StreamWork(other=1), 2: sw.StreamWork(gemm=1)}, placed=("gemm",)
    )
    assert sw.stream_shortfalls(two, {0: {"gemm": 1}, 1: {"other": 1, "gemm": 2}, 2: {"gemm": 1}}) == [
        "stream 1: 2 gemm op(s) per iteration, declared none (only streams 0, 2 run gemm ops)"
    ]
    nobody = sw.WorkSpec({0: sw.StreamWork(other=1)}, placed=("spin",))
    assert sw.stream_shortfalls(nobody, {0: {"other": 1}, 3: {"spin": 1}}) == [
        "stream 3: 1 spin op(s) per iteration, declared none (only streams none run spin ops)"
    ]


def test_without_stream_indices_the_totals_are_compared():
    assert SPEC.totals == {"gemm": 1, "spin": 0, "other": 3, "ops": 6}
    assert sw.total_shortfalls(SPEC, {"gemm": 1, "other": 5}) == []
    assert sw.total_shortfalls(SPEC, {"gemm": 1, "other": 4}) == [
        "all streams: 5 op(s) of any kind per iteration, declared at least 6"
    ]


def test_the_best_round_is_judged():
    good, short = ({0: {"gemm": 1}, 1: {"other": 3}, 2: {"other": 2}}, {}), ({0: {"gemm": 1}}, {})
    assert sw.judge(SPEC, [short, good, short], 1, "t", by_stream=True).ok
    bad = sw.judge(SPEC, [short, short], 1, "t", by_stream=True)
    assert not bad.ok and bad.rounds == 2 and "stream 1" in bad.problems[0]


def test_a_spec_refuses_bad_counts_and_kinds():
    with pytest.raises(ValueError, match="StreamWork.gemm must be an int >= 0"):
        sw.StreamWork(gemm=-1)
    with pytest.raises(ValueError, match="unknown kind 'tiny'"):
        sw.WorkSpec({0: sw.StreamWork()}, placed=("tiny",))


# ------------------------------------------------------------------------------ GPU path: kernel timestamps
def _rounds(name):
    return kt.parse_rounds(json.loads((DATA / name).read_text()))


def test_recorded_h100_trace_four_streams_one_spin_each():
    rounds = _rounds(
        "kernels_4streams_cuda.json"
    )  # recorded on an H100: one spin kernel per stream per round
    counts = [sw.kernel_round_counts(r.blocks, r.ops) for r in rounds]
    one_spin = sw.WorkSpec(dict.fromkeys(range(4), sw.StreamWork(spin=1)), placed=("spin",))
    assert sw.judge(one_spin, counts, 1, "kernel timestamps", by_stream=True).ok
    five = sw.WorkSpec(dict.fromkeys(range(5), sw.StreamWork(spin=1)))  # a fifth stream that never ran
    assert sw.judge(five, counts, 1, "k", by_stream=True).problems == (
        "stream 4: 0 spin op(s) per iteration, declared at least 1",
    )
    two = sw.WorkSpec(dict.fromkeys(range(4), sw.StreamWork(spin=2)))
    assert len(sw.judge(two, counts, 1, "k", by_stream=True).problems) == 4


def test_recorded_h100_trace_async_dataload_meets_its_own_declaration(cpu):
    rounds = _rounds("kernels_async_dataload_cuda.json")  # three streams: copy, preprocess, compute
    spec = REGISTRY["async_dataload"](cpu, 3, size="smoke").expected_work()
    counts = [sw.kernel_round_counts(r.blocks, r.ops) for r in rounds]
    assert sw.judge(spec, counts, 1, "k", by_stream=True).ok
    for r in rounds:  # the compute stream's kernels lost: that stream is named
        r.blocks = [b for b in r.blocks if b.stream_index != 2]
    counts = [sw.kernel_round_counts(r.blocks, r.ops) for r in rounds]
    assert sw.judge(spec, counts, 1, "k", by_stream=True).problems == (
        "stream 2: 0 op(s) of any kind per iteration, declared at least 1",
    )


def _kernel_round(blocks, n=0):
    """A parsed round from (stream index, [kernel names]) blocks; a graph replay's round has no blocks."""
    rnd = kt.KernelRound(n)
    t = 0.0
    for i, names in blocks:
        block = kt.Block(i, None)
        for name in names:
            op = DeviceOp(name, 7 + i, t, 1.0)
            block.ops.append(op)
            rnd.ops.append(op)
            t += 1.0
        rnd.blocks.append(block)
    return rnd


class _Run:
    def __init__(self, rounds, k=1):
        self.kernel_rounds, self.iterations_per_round = rounds, k


GEMM, TINY, SPIN = "sm90_xmma_gemm_bf16", "vectorized_elementwise_kernel", "spin_kernel(long)"


def _hetero_round(gemm_streams, tiny_per_stream, n=4):
    blocks = [(i, [GEMM]) for i in gemm_streams]
    blocks += [(i, [TINY] * tiny_per_stream[i - n // 2]) for i in range(n // 2, n)]
    return _kernel_round(blocks)


def test_hetero_kernels_kernel_timeline_check(cpu):
    w = HeteroKernels(cpu, 4, size="smoke")  # GEMMs on streams 0, 1; 16 tiny kernels on streams 2, 3
    spec = w.expected_work()
    assert runner._timeline_verdict(spec, _Run([_hetero_round([0, 1], [16, 16])]), "k").ok
    fewer = runner._timeline_verdict(spec, _Run([_hetero_round([0, 1], [16, 15])]), "k")
    assert fewer.problems[0] == "stream 3: 15 other op(s) per iteration, declared at least 16"
    on_zero = runner._timeline_verdict(spec, _Run([_hetero_round([0, 0], [16, 16])]), "k")
    assert on_zero.problems[0] == "stream 1: 0 gemm op(s) per iteration, declared at least 1"


def test_a_graph_replay_round_is_checked_by_its_totals(cpu):
    spec = StreamConcurrency(cpu, 3, size="smoke").expected_work()  # 2 spins + 1 fill on each of 3 streams
    replay = kt.KernelRound(0, ops=[DeviceOp(SPIN, 9, 0, 1)] * 6 + [DeviceOp(TINY, 9, 1, 1)] * 3)
    verdict = runner._timeline_verdict(spec, _Run([replay]), "kernel pass")
    assert verdict.ok and not verdict.by_stream and "graph replay" in verdict.source
    replay.ops = replay.ops[1:]  # one spin fewer
    assert runner._timeline_verdict(spec, _Run([replay]), "k").problems[0] == (
        "all streams: 5 spin op(s) per iteration, declared at least 6"
    )


# ------------------------------------------------------------------------------ CPU path: the launch log
@pytest.mark.parametrize("order", ["breadth", "depth"])
def test_stream_concurrency_runs_its_spins_on_every_stream(cpu, order):
    res = runner.run_workload(
        cpu, StreamConcurrency(cpu, 3, size="smoke", issue_order=order), cpu.streams(3), PLAN
    )
    check = res.extra_info["stream_work"]
    assert check["declared"]["totals_per_iteration"] == {"gemm": 0, "spin": 6, "other": 3, "ops": 9}
    assert check["checks"] == [
        {
            "source": runner.LAUNCH_LOG_SOURCE,
            "rounds_checked": 1,
            "by_stream": True,
            "streams_with_work": 3,
            "ok": True,
            "problems": [],
        }
    ]


class _LastStreamSkipsSpins(StreamConcurrency):
    def step(self, rec) -> None:
        for i in [i for _ in range(2) for i in range(self.n_streams - 1)]:
            with rec.use(i):
                self.device.spin(self.cycles)
        for i in range(self.n_streams):
            with rec.use(i):
                self.out[i : i + 1].fill_(float(i + 1))


def test_a_workload_that_launches_less_than_it_declares_fails_on_cpu(cpu):
    with pytest.raises(
        WorkloadCheckError, match=r"stream 2: 0 spin op\(s\) per iteration, declared at least 2"
    ):
        runner.run_workload(cpu, _LastStreamSkipsSpins(cpu, 3, size="smoke"), cpu.streams(3), PLAN)


@pytest.mark.parametrize("order", ["breadth", "depth"])
@pytest.mark.parametrize("n", [2, 4, 5])
def test_hetero_kernels_puts_gemms_and_tiny_kernels_where_it_declares(cpu, n, order):
    for with_gemms in (False, True):
        w = HeteroKernels(cpu, n, size="smoke", with_gemms=with_gemms, issue_order=order)
        res = runner.run_workload(cpu, w, cpu.streams(n), PLAN)
        assert res.extra_info["stream_work"]["checks"][0]["ok"]
        totals = res.extra_info["stream_work"]["declared"]["totals_per_iteration"]
        assert totals["gemm"] == (n // 2 if with_gemms else 0)
        assert totals["other"] == (n - n // 2) * max(8, 32 // (n - n // 2))


def test_every_registered_workload_declares_its_work_per_stream():
    for name, cls in REGISTRY.items():
        assert cls.expected_work is not runner.Workload.expected_work, name


@pytest.mark.slow  # every workload at smoke size, several stream counts and both issue orders
def test_every_workload_meets_its_declaration_at_its_stream_range(cpu):
    from aorta.hw_queue.workload import WorkloadUnavailable

    for name, cls in REGISTRY.items():
        for n in sorted({max(1, cls.spec.min_streams), 2, 3, 7, cls.spec.max_streams}):
            if not cls.spec.min_streams <= n <= cls.spec.max_streams:
                continue
            for order in ("breadth", "depth"):
                w = cls(cpu, n, size="smoke", issue_order=order)
                try:
                    w.setup()
                except WorkloadUnavailable:
                    break
                info = runner.check_stream_work(cpu, w, cpu.streams(n), None, None)
                assert info["checks"][0]["ok"], (name, n, order)


def test_a_benchmark_whose_stream_did_less_fails_and_records_nothing(pytester):
    pytester.makepyfile(
        test_spins="""
        from aorta.hw_queue.workloads.stream_concurrency import StreamConcurrency

        class LastStreamSkipsSpins(StreamConcurrency):
            def step(self, rec):
                for i in [i for _ in range(2) for i in range(self.n_streams - 1)]:
                    with rec.use(i):
                        self.device.spin(self.cycles)
                for i in range(self.n_streams):
                    with rec.use(i):
                        self.out[i : i + 1].fill_(float(i + 1))

        def test_spins(hw_queue, streams):
            hw_queue(LastStreamSkipsSpins, streams, size="smoke")
    """
    )
    out = pytester.path / "run.json"
    result = pytester.runpytest(
        "--streams=3",
        "--rounds=2",
        "--warmup=0",
        "--aorta-device=cpu",
        "-p",
        "no:cacheprovider",
        f"--benchmark-json={out}",
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*stream_concurrency stream work check failed, nothing recorded*stream 2: 0 spin op(s) per iteration*"
        ]
    )
    assert not out.exists() or json.loads(out.read_text())["benchmarks"] == []


def test_judge_counts_over_the_rounds_iterations_and_reports_the_first_best_round():
    spec = sw.WorkSpec({0: sw.StreamWork(gemm=1), 1: sw.StreamWork(other=2)})
    one_iteration = ({0: {"gemm": 1}, 1: {"other": 2}}, {"gemm": 1, "other": 2})
    assert sw.judge(spec, [one_iteration], 1, "k", by_stream=True).ok
    # the same counts over a round of two iterations: half the declared work per iteration
    short = sw.judge(spec, [one_iteration], 2, "k", by_stream=True)
    assert short.problems == (
        "stream 0: 0.5 gemm op(s) per iteration, declared at least 1",
        "stream 1: 1 other op(s) per iteration, declared at least 2",
    )
    totals = sw.judge(spec, [one_iteration], 2, "k", by_stream=False)
    assert totals.problems[0] == "all streams: 0.5 gemm op(s) per iteration, declared at least 1"
    assert totals.streams_with_work is None and short.streams_with_work == 2
    a = ({0: {"gemm": 1}}, {})  # stream 1 missing
    b = ({1: {"other": 2}}, {})  # stream 0 missing
    assert sw.judge(spec, [a, b], 1, "k", by_stream=True).problems == (
        "stream 1: 0 other op(s) per iteration, declared at least 2",
    )
    nothing = sw.judge(spec, [], 1, "k", by_stream=True)
    assert not nothing.ok and nothing.problems == ("no round to check",)


def test_a_kind_absent_from_the_round_is_short_in_the_totals():
    assert sw.total_shortfalls(SPEC, {"other": 6}) == [
        "all streams: 0 gemm op(s) per iteration, declared at least 1"
    ]


def test_a_failure_message_shows_eight_problems_and_counts_the_rest():
    many = sw.Verdict("kernel timestamps", 3, tuple(f"p{i}" for i in range(10)), True)
    assert sw.failure_message("w", many) == (
        "w: the work that ran is less than the workload declares (kernel timestamps, best of 3 round(s)): "
        "p0; p1; p2; p3; p4; p5; p6; p7; and 2 more"
    )
    eight = sw.Verdict("s", 1, tuple(f"p{i}" for i in range(8)), True)
    assert sw.failure_message("w", eight).endswith("round(s)): p0; p1; p2; p3; p4; p5; p6; p7")
    assert sw.Verdict("s", 1, tuple(str(i) for i in range(25)), True).to_info()["problems"] == [
        str(i) for i in range(20)
    ]


def test_a_workspec_refuses_bad_streams_and_kinds_naming_them():
    with pytest.raises(ValueError) as e:
        sw.WorkSpec({}, placed=())
    assert str(e.value) == "WorkSpec.streams: stream indices must be ints >= 0, got []"
    with pytest.raises(ValueError, match=r"got \[-1, 0\]$"):
        sw.WorkSpec({0: sw.StreamWork(ops=1), -1: sw.StreamWork(ops=1)})
    with pytest.raises(ValueError) as e:
        sw.WorkSpec({0: sw.StreamWork(ops=1)}, placed=("warp",))
    assert str(e.value) == f"WorkSpec.placed: unknown kind 'warp' (allowed: {', '.join(sw.KINDS)})"
    spec = sw.every_stream(3, sw.StreamWork(gemm=1), note="why")
    assert spec.note == "why" and sw.every_stream(1, sw.StreamWork(gemm=1)).note == ""
    assert spec.to_info() == {
        "streams_declared": 3,
        "totals_per_iteration": {"gemm": 3, "spin": 0, "other": 0, "ops": 3},
        "placed": [],
    }


def test_placed_kinds_on_profiler_streams_named_by_strings_and_ints():
    spec = sw.WorkSpec({0: sw.StreamWork(gemm=1)}, placed=("gemm",))
    got = sw.stream_shortfalls(spec, {0: {"gemm": 1}, "7": {"gemm": 2}, 3: {"other": 1}})
    assert got == ["stream 7: 2 gemm op(s) per iteration, declared none (only streams 0 run gemm ops)"]
