"""Pieces of the FSDP suite: launch environment, device binding, start-up and collection checks, figures,
JSONL."""

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from aorta.fsdp.distributed import device_index_for, launch_info
from aorta.fsdp.figures import build_result, reading_notes, slowest_per_round
from aorta.fsdp.metrics_log import read_jsonl, write_jsonl
from aorta.fsdp.plugin import _results_on_rank_0_only, first_difference
from aorta.fsdp.rank_result import RankResult
from aorta.fsdp.scenarios import SCENARIOS, Scenario, get_scenario
from aorta.fsdp.startup import rank_settings, settings_differences

pytest_plugins = ["pytester"]


def test_launch_info_reads_torchrun_env_and_defaults_to_one_rank():
    assert launch_info({}) == launch_info({"LOCAL_RANK": "3"})
    assert launch_info({}).world_size == 1 and not launch_info({}).torchrun
    info = launch_info({"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1"})
    assert (info.rank, info.world_size, info.local_rank, info.torchrun) == (3, 4, 1, True)
    with pytest.raises(ValueError, match="outside WORLD_SIZE"):
        launch_info({"RANK": "4", "WORLD_SIZE": "4"})


def test_local_ranks_past_the_visible_devices_wrap_with_a_warning():
    assert device_index_for(1, 2) == (1, None)
    index, warning = device_index_for(5, 2)
    assert index == 1 and "LOCAL_RANK=5" in warning and "2 device(s)" in warning


def test_collection_check_names_the_first_difference():
    assert first_difference([["a", "b"], ["a", "b"]]) is None
    assert "rank 1 collected 'c' at position 1 where rank 0 collected 'b'" in first_difference(
        [["a", "b"], ["a", "c"]]
    )
    assert "rank 0 collected 2 tests, rank 2 collected 1" in first_difference([["a", "b"], ["a", "b"], ["a"]])


@pytest.mark.parametrize(
    "opened", [True, False], ids=["file-pytest-benchmark-5.2", "path-pytest-benchmark-5.3"]
)
def test_other_ranks_drop_the_json_option_without_touching_rank_0s_file(tmp_path, opened):
    path = tmp_path / "run.json"
    path.write_text("{}")  # what rank 0 wrote (5.2 opens and empties it on every rank at parse time)
    value = path.open("ab") if opened else Path(path)
    config = SimpleNamespace(
        option=SimpleNamespace(benchmark_json=value, benchmark_save="x", benchmark_autosave=True)
    )
    _results_on_rank_0_only(config)
    assert config.option.benchmark_json is None
    assert (config.option.benchmark_save, config.option.benchmark_autosave) == (None, False)
    assert path.read_text() == "{}"
    assert not opened or value.closed


def test_scenario_ids_are_stable_and_unique():
    assert [s.id for s in SCENARIOS] == [
        "baseline",
        "explicit_prefetch",
        "no_reshard",
        "fp32",
        "grad_accum",
        "compile",
        "ddp",
        "comm_stress",
    ]
    assert get_scenario("ddp").wrapper == "ddp"
    with pytest.raises(KeyError, match="valid ids: baseline"):
        get_scenario("nope")
    with pytest.raises(ValueError, match="FSDP options"):
        Scenario(id="x", description="", wrapper="ddp", explicit_prefetch=True)


def test_step_time_is_the_slowest_rank_round_by_round():
    assert slowest_per_round([[10.0, 12.0, 9.0], [11.0, 8.0, 9.5]]) == [11.0, 12.0, 9.5]
    with pytest.raises(ValueError, match="different numbers of rounds"):
        slowest_per_round([[1.0], [1.0, 2.0]])


def _rank(rank, step_ms, overlap=None):
    return {
        "rank": rank,
        "step_ms": step_ms,
        "samples_per_step": 4,
        "peak_memory_bytes": None,
        "overlap": overlap,
        "overlap_reason": None if overlap else "CPU backend (gloo): no kernels",
        "compute_slowdown_ratio": None,
        "slowdown_reason": "CPU backend (gloo): no kernels",
    }


def _built(*args, **kw):
    """build_result's record as it is written into the benchmark JSON."""
    scenario, ranks, *rest = args
    step_ms, record = build_result(scenario, [RankResult.from_dict(r) for r in ranks], *rest, **kw)
    return step_ms, record.to_extra_info()


def test_build_result_throughput_from_global_batch_and_unavailable_reasons():
    step_ms, extra = _built(
        {"id": "baseline"},
        [_rank(1, [20.0, 40.0, 100.0]), _rank(0, [25.0, 30.0, 90.0])],
        world_size=2,
        seq_len=8,
        backend="cpu",
        comm_library="gloo",
        config={},
    )
    assert step_ms == [25.0, 40.0, 100.0]  # the slowest rank, round by round (not either rank's own)
    m = extra["metrics"]
    assert m["step_ms"]["value"] == 40.0  # the median round; the mean would be 55
    assert m["samples_per_s"]["samples"] == pytest.approx([8 / 0.025, 8 / 0.040, 8 / 0.1])  # 2 ranks x 4
    assert m["samples_per_s"]["value"] == pytest.approx(8 / 0.040)
    assert m["tokens_per_s"]["samples"] == pytest.approx([8 * 8 / 0.025, 8 * 8 / 0.040, 8 * 8 / 0.1])
    assert m["step_ms"]["higher_is_better"] is False and extra["headline_metric"] == "step_ms"
    assert "overlap_ratio_worst_rank" not in m
    assert extra["unavailable"]["overlap_ratio_worst_rank"] == "rank 0: CPU backend (gloo): no kernels"
    assert extra["unavailable"]["exposed_transfer_ms_worst_rank"] == "rank 0: CPU backend (gloo): no kernels"
    assert [r["rank"] for r in extra["per_rank"]] == [0, 1]


def test_jsonl_is_rewritten_atomically_not_appended(tmp_path):
    path = tmp_path / "rank_0_metrics.jsonl"
    write_jsonl(path, [{"kind": "step", "loss": 1.0}, {"kind": "step", "loss": float("nan")}])
    write_jsonl(path, [{"kind": "step", "loss": 2.0}])
    assert read_jsonl(path) == [{"kind": "step", "loss": 2.0}]
    assert list(tmp_path.iterdir()) == [path]  # no temp file left behind

    class Boom(Exception):
        pass

    def records():
        yield {"kind": "step"}
        raise Boom

    with pytest.raises(Boom):
        write_jsonl(path, records())
    assert read_jsonl(path) == [{"kind": "step", "loss": 2.0}]  # a failed write loses nothing
    assert json.loads(path.read_text())["loss"] == 2.0


def test_trace_figures_flow_into_the_benchmark_metrics():
    """The GPU path end to end on recorded two-rank NCCL traces (tests/data/collectives, answers worked out in
    tests/fsdp/test_collective_match.py): per-step figures -> rank results -> rank 0's matching -> metrics."""
    from pathlib import Path

    from aorta.fsdp import trace_analysis as ta
    from aorta.fsdp.profiled_steps import step_figures
    from aorta.timeline.profiler_steps import step_ranges
    from aorta.timeline.trace_events import load_trace

    ranks = []
    for r in (0, 1):
        doc = load_trace(Path(__file__).parents[1] / "data" / "collectives" / f"nccl_2ranks_rank{r}.json")
        kernels = ta.parse_chrome_trace(doc)
        per_step, timeline, reason, note = step_figures(kernels, step_ranges(doc), 2, 2)
        assert reason is None and note == (  # a hand-written trace without launches: said per step
            "step 0: 7 ops with no launch in the trace, placed by device start; step 1: 7 ops with no launch in "
            "the trace, placed by device start (a kernel goes to the step holding its device start)"
        )
        ov = ta.analyze(kernels, steps=2, n_ranks=2).as_dict()
        ranks.append(
            {
                **_rank(r, [1.0, 2.0], ov),
                "peak_memory_bytes": 1024,
                "per_step": per_step,
                "timeline": timeline,
            }
        )
    _, extra = _built(
        {"id": "baseline"}, ranks, world_size=2, seq_len=8, backend="cuda", comm_library="nccl", config={}
    )
    m = extra["metrics"]
    # Worst rank per step: rank 0 hides 550 of 950 µs of communication, rank 1 500 of 803.
    assert m["overlap_ratio_worst_rank"]["samples"] == pytest.approx([min(550 / 950, 500 / 803)] * 2)
    assert m["exposed_transfer_ms_worst_rank"]["samples"] == pytest.approx([0.303, 0.303])
    assert m["exposed_wait_ms_worst_rank"]["samples"] == pytest.approx([0.097, 0.097])
    # transfer, hidden or not: 300 + 150 + 303 µs on both ranks (the collectives end together)
    assert m["transfer_ms_worst_rank"]["samples"] == pytest.approx([0.753, 0.753])
    # Judged: exposed communication and its transfer part; overlap ratio only reported (it rises when
    # communication slows and more of it hides), wait and comm busy reported (they include peer waits).
    judged = {k for k, v in m.items() if v.get("judged", True)}
    assert {
        "exposed_comm_ms_worst_rank",
        "exposed_transfer_ms_worst_rank",
        "transfer_ms_worst_rank",
        "compute_busy_ms_worst_rank",
    } <= judged
    assert not {"overlap_ratio_worst_rank", "exposed_wait_ms_worst_rank", "comm_busy_ms_worst_rank"} & judged
    assert not any("noise_floor" in v for v in m.values())  # measured by the gate, never declared
    assert m["compute_busy_ms_worst_rank"]["samples"] == pytest.approx([1.0, 1.0])
    assert m["peak_memory_bytes"]["value"] == 1024
    assert extra["stragglers"][0]["rank"] == 1 and extra["clock_alignment"]["alignment_error_us"] == 3.0
    assert [s["exposed_wait_ms"] for s in extra["per_rank_steps"]["1"]] == [0.0, 0.0]
    assert all(
        "timeline" not in r for r in extra["per_rank"]
    )  # rank 0's matching input stays out of the JSON
    assert "compute_slowdown_ratio_worst_rank" in extra["unavailable"]


def test_profiled_steps_without_step_ranges_are_unavailable_with_the_reason():
    from aorta.fsdp.profiled_steps import step_figures

    per_step, timeline, reason, _ = step_figures([], [(0.0, 1.0)], 3, 2)
    assert per_step is None and timeline is None
    assert "marked 1 step ranges (ProfilerStep#N) for 3 profiled steps" in reason


def test_reading_notes_flag_a_host_bound_idle_profiler_slowed_step():
    # 2xH200, old default batch 8: enqueue 70.4 ms of a 70.0 ms step, idle 65%, profiled 100.7 ms per step
    notes = reading_notes(
        {"step_ms": 70.0, "gpu_idle_share": 0.65, "profiled_step_ms": 100.7}, [70.1, 70.4, 70.9]
    )
    assert [n.split(" ")[0] for n in notes] == ["host-bound:", "profiled"]
    assert "70.4 ms to enqueue a 70.0 ms step" in notes[0] and "65%" in notes[0] and "+44%" in notes[1]


def test_reading_notes_say_nothing_for_a_gpu_bound_step():
    # 2xH200, batch 32: enqueue 72 of 92 ms, idle 6%, profiled 105 ms (+14%)
    assert reading_notes({"step_ms": 92.0, "gpu_idle_share": 0.06, "profiled_step_ms": 105.1}, [72.1]) == []
    assert reading_notes({"step_ms": 92.0}, []) == []  # nothing measured, nothing said


def test_a_step_that_waits_on_a_copy_is_not_called_host_bound():
    # 2xH200 comm_stress, batch 32: a blocking device-to-host copy makes enqueue 92.9 of 92.9 ms; GPU idle 7%
    assert reading_notes({"step_ms": 92.9, "gpu_idle_share": 0.067, "profiled_step_ms": 99.0}, [92.9]) == []
    idle_only = reading_notes({"step_ms": 92.9, "gpu_idle_share": 0.5}, [40.0])
    assert len(idle_only) == 1 and idle_only[0].startswith("the GPU ran no kernel for 50%")


def test_settings_differences_name_the_key_the_ranks_and_the_values():
    same = rank_settings({"training": {"steps": 2}}, {"aorta_size": "auto"})
    other = rank_settings({"training": {"steps": 4}}, {"aorta_size": "smoke"})
    assert settings_differences([same, same]) == []
    assert settings_differences([same, other, same]) == [
        '--aorta-size is "auto" on rank(s) [0, 2] but "smoke" on rank(s) [1]',
        "training.steps is 2 on rank(s) [0, 2] but 4 on rank(s) [1]",
    ]
    assert (
        same["--aorta-streams"] == '"<missing>"'
    )  # an option this pytest lacks compares as missing on every rank


@pytest.mark.parametrize("fixture, stopped", [("fsdp_profiler", True), ("tmp_path", False)])
def test_an_unwritable_artifacts_folder_stops_the_run_before_any_test(pytester, fixture, stopped):
    pytester.makepyfile(f"def test_x({fixture}):\n    pass\n")
    (pytester.path / "afile").write_text("")
    result = pytester.runpytest_inprocess("--aorta-device", "cpu", "--aorta-artifacts", "afile/artifacts")
    if stopped:  # a test that writes there was collected
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(
            ["*--aorta-artifacts afile/artifacts: cannot be created: afile is a file, not a folder*"]
        )
        assert "passed" not in result.stdout.str()
    else:
        result.assert_outcomes(passed=1)
