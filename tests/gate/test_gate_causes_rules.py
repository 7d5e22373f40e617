"""The cause rules one at a time, on hand-made evidence (pure): where a rule has no data it stays silent, and
what the unexplained verdict says it checked, word for word."""

from aorta.gate.causes import causes as c

MACHINE = {"backend": "cuda", "gpu_name": "NVIDIA H100 80GB HBM3", "gpu_count": 1, "torch": "2.11.0+cu130"}


def _tel(rounds, throttled, **why):
    return {"telemetry": {"rounds": rounds, "throttled_rounds": throttled, "throttle_causes": why}}


def test_nothing_recorded_is_unexplained_and_names_what_is_missing():
    (only,) = c.find_causes([{}], [{}], None, slower=True)
    assert only["cause"] == c.UNEXPLAINED
    assert only["summary"] == "no rule holds; not recorded: kernel summaries, telemetry, host enqueue time"
    assert only["evidence"] == {
        "checked": [k for k in c.CAUSES if k != c.UNEXPLAINED],
        "not_recorded": ["kernel summaries", "telemetry", "host enqueue time"],
    }
    assert c.UNEXPLAINED in c.CAUSES and len(only["evidence"]["checked"]) == len(c.CAUSES) - 1


def test_telemetry_counts_as_recorded_only_when_both_sides_have_it():
    ref = [{"telemetry": {"rounds": 4, "throttled_rounds": 0}}]
    cand = [{"host_enqueue_ms_per_iteration": 0.1}]
    (only,) = c.find_causes(ref, cand, None, slower=True)
    assert only["evidence"]["not_recorded"] == ["kernel summaries", "telemetry"]


def test_with_every_rule_given_its_data_the_unexplained_verdict_says_so():
    same = [_tel(4, 0) | {"host_enqueue_ms_per_iteration": 0.1}]
    diff = {  # kernel_diff's shape, nothing moved
        "runs": [3, 3],
        "device_ms": [1.0, 1.0],
        "launches": [10, 10],
        "top": [],
        "appeared": [],
        "disappeared": [],
        "launch_changes": [],
        "shape_changes": [],
        "unsure": 0,
    }
    (only,) = c.find_causes(same, same, diff, slower=True)
    assert only["summary"] == "no rule holds; every rule had its data"
    assert only["evidence"]["not_recorded"] == []


def test_relative_change_needs_two_values_and_a_positive_base():
    assert c._rel(2.0, 3.0) == 0.5
    assert c._rel(None, 3.0) is None and c._rel(2.0, None) is None
    assert c._rel(0.0, 3.0) is None and c._rel(-1.0, 3.0) is None


def test_throttle_needs_rounds_on_both_sides():
    assert c.throttle([{}], [_tel(4, 4, sw_power_cap=4)], slower=True) is None  # no telemetry on one side
    no_rounds = [{"telemetry": {"throttled_rounds": 0}}]
    assert c.throttle(no_rounds, [_tel(4, 4, sw_power_cap=4)], slower=True) is None


def test_throttle_names_every_reason_in_order():
    cause = c.throttle([_tel(4, 0)], [_tel(4, 4, sw_thermal=1, hw_slowdown=2, sw_power_cap=4)], slower=True)
    assert cause["summary"] == (
        "the candidate was throttled in 4 rounds (hw_slowdown, sw_power_cap, sw_thermal); throttled share "
        "0% -> 100%"
    )


def test_a_collective_kernel_name_without_algorithm_and_protocol_gives_no_config():
    assert c._nccl_config("ncclDevKernel_AllReduce_Sum_bf16_RING_LL") == {
        "algorithm": "RING",
        "protocol": "LL",
    }
    assert c._nccl_config("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)") == {}


def test_environment_needs_both_machines_and_names_every_setting():
    other = MACHINE | {"env": {"NCCL_NVLS_ENABLE": "1", "CUDA_DEVICE_MAX_CONNECTIONS": "8"}}
    assert c.environment(None, other) is None and c.environment(MACHINE, None) is None
    cause = c.environment(MACHINE | {"env": {"NCCL_NVLS_ENABLE": "0"}}, other)
    assert cause["cause"] == c.ENVIRONMENT
    assert cause["summary"] == "CUDA_DEVICE_MAX_CONNECTIONS unset -> 8, NCCL_NVLS_ENABLE 0 -> 1"


def _diff(device_ms=(1.0, 1.0), **rows):
    d = {"device_ms": list(device_ms), "appeared": [], "disappeared": [], "launch_changes": []}
    return d | {"shape_changes": []} | rows


def _host(ms):
    return [{"host_enqueue_ms_per_iteration": ms, "gpu_busy_share": 0.5}]


def test_launch_path_word_for_word_and_silent_without_its_data():
    cause = c.launch_path(_host(1.0), _host(1.5), _diff(), slower=True)
    assert cause["summary"] == "host enqueue 1 -> 1.5 ms/iteration (+50.0%) while kernel time moved +0.0%"
    assert cause["evidence"]["kernel_device_ms_per_iteration"] == [1.0, 1.0]
    assert c.launch_path([{}], _host(1.5), _diff(), slower=True) is None  # no host time on one side
    assert c.launch_path(_host(1.0), _host(1.5), None, slower=True) is None  # no kernel diff
    assert c.launch_path(_host(1.0), _host(1.5), _diff((0.0, 1.0)), slower=True) is None  # no kernel base


def test_launch_path_when_faster_needs_the_host_to_have_sped_up_by_the_same_margin():
    # faster: the host must have dropped by 1 - 1/1.05 (4.8%) or more
    assert c.launch_path(_host(1.0), _host(0.95), _diff(), slower=False)["cause"] == c.LAUNCH_PATH
    assert c.launch_path(_host(1.0), _host(0.90), _diff(), slower=False)["cause"] == c.LAUNCH_PATH
    assert c.launch_path(_host(1.0), _host(0.97), _diff(), slower=False) is None
    assert c.launch_path(_host(1.0), _host(1.10), _diff(), slower=False) is None  # grew: not a speed-up


def _conc(x, streams=4):
    return [{"effective_concurrency": x, "streams_with_work": streams}]


def test_queue_concurrency_word_for_word_and_only_with_the_same_kernels():
    cause = c.queue_concurrency(_conc(4.0), _conc(2.0, 2), _diff(), slower=True)
    assert cause["summary"] == "same kernels (device time +0.0%), effective concurrency 4 -> 2 (-50.0%)"
    assert cause["evidence"] == {
        "effective_concurrency": [4.0, 2.0],
        "kernel_device_ms_per_iteration": [1.0, 1.0],
        "streams_with_work": [4.0, 2.0],
    }
    row = {"name": "k", "family": "gemm"}
    for changed in ("appeared", "disappeared", "launch_changes"):
        assert c.queue_concurrency(_conc(4.0), _conc(2.0), _diff(**{changed: [row]}), slower=True) is None
    assert c.queue_concurrency(_conc(4.0), _conc(2.0), _diff((0.0, 1.0)), slower=True) is None
    # faster: concurrency rose by 5% or more
    assert c.queue_concurrency(_conc(2.0), _conc(4.0), _diff(), slower=False)["cause"] == c.QUEUE_CONCURRENCY
    assert c.queue_concurrency(_conc(4.0), _conc(2.0), _diff(), slower=False) is None


def _comm(exposed, wait, transfer):
    return [{"comm": {"exposed_comm_ms": exposed, "exposed_wait_ms": wait, "exposed_transfer_ms": transfer}}]


def test_peer_wait_word_for_word_and_silent_without_its_data():
    cause = c.peer_wait(_comm(3.0, 2.0, 1.0), _comm(4.0, 2.5, 1.5), slower=False)
    assert cause is None  # slower figures only count for a slower verdict
    cause = c.peer_wait(_comm(3.0, 2.0, 1.0), _comm(4.0, 3.0, 1.0), slower=True)
    assert cause["summary"] == "exposed communication 3 -> 4 ms/step: wait +1 ms, transfer +0 ms"
    assert c.peer_wait([{}], _comm(4.0, 3.0, 1.0), slower=True) is None
    assert c.peer_wait(_comm(3.0, None, 1.0), _comm(4.0, 3.0, 1.0), slower=True) is None


def test_peer_wait_needs_wait_to_move_more_than_transfer_and_the_right_way():
    assert c.peer_wait(_comm(2.0, 1.0, 1.0), _comm(4.0, 2.0, 2.0), slower=True) is None  # equal parts
    half = c.peer_wait(_comm(2.0, 1.0, 1.0), _comm(2.6, 1.5, 1.1), slower=True)
    assert half["summary"] == "exposed communication 2 -> 2.6 ms/step: wait +0.5 ms, transfer +0.1 ms"
    # faster: exposed communication dropped by 5% or more, mostly as wait
    faster = c.peer_wait(_comm(4.0, 3.0, 1.0), _comm(3.0, 2.0, 1.0), slower=False)
    assert faster["cause"] == c.PEER_WAIT
    assert c.peer_wait(_comm(4.0, 3.0, 1.0), _comm(3.9, 2.9, 1.0), slower=False) is None  # -2.5%: too little


AR = "collective:all_reduce"
AG = "collective:all_gather"


def _row(name, family, grid=None, block=None, launches=(1, 1), device_ms=(1.0, 1.0)):
    return {
        "name": name,
        "family": family,
        "grid": grid,
        "block": block,
        "launches": list(launches),
        "device_ms": list(device_ms),
    }


def test_collective_config_pairs_gone_and_new_kernels_of_each_collective_word_for_word():
    diff = _diff(
        disappeared=[
            _row("AllGather_RING_LL", AG, grid=[[8, 1, 1], None]),  # gone with nothing new: no cause
            _row("AllReduce_RING_LL", AR, grid=[[16, 1, 1], None]),
            _row("AllReduce_TREE_LL", AR),
            _row("gemm_a", "gemm", grid=[[4, 1, 1], None]),  # not a collective
        ],
        appeared=[_row("AllReduce_RING_SIMPLE", AR, grid=[None, [24, 1, 1]]), _row("gemm_b", "gemm")],
    )
    (cause,) = c.collective_config(diff)
    assert cause["summary"] == (
        "collective:all_reduce: AllReduce_RING_LL, AllReduce_TREE_LL -> AllReduce_RING_SIMPLE"
    )
    assert cause["evidence"] == {
        "op": AR,
        "baseline_kernels": [
            {"name": "AllReduce_RING_LL", "grid": [16, 1, 1], "algorithm": "RING", "protocol": "LL"},
            {"name": "AllReduce_TREE_LL", "grid": None, "algorithm": "TREE", "protocol": "LL"},
        ],
        "candidate_kernels": [
            {"name": "AllReduce_RING_SIMPLE", "grid": [24, 1, 1], "algorithm": "RING", "protocol": "SIMPLE"}
        ],
    }


def test_collective_config_names_a_collective_whose_grid_changed_and_nothing_else():
    diff = _diff(
        shape_changes=[
            _row("gemm_a", "gemm", grid=[[4, 1, 1], [8, 1, 1]]),  # not a collective, listed first
            _row("AllGather_RING_LL", AG),  # no grid recorded
            _row("AllReduce_RING_LL", AR, grid=[[16, 1, 1], [16, 1, 1]], block=[[64], [128]]),  # block only
            _row("AllReduce_RING_SIMPLE", AR, grid=[[16, 1, 1], [4, 1, 1]], block=[[64], [64]]),
        ]
    )
    (cause,) = c.collective_config(diff)
    assert (
        cause["summary"]
        == "collective:all_reduce: AllReduce_RING_SIMPLE grid [16, 1, 1] -> [4, 1, 1] (channels)"
    )
    assert cause["evidence"] == {
        "op": AR,
        "kernel": "AllReduce_RING_SIMPLE",
        "grid": [[16, 1, 1], [4, 1, 1]],
        "block": [[64], [64]],
    }
    assert c.collective_config(None) == [] and c.collective_config({}) == []


def test_kernel_selection_names_the_swap_of_an_op_word_for_word():
    diff = _diff(
        (100.0, 100.0),
        disappeared=[
            _row(
                "AllReduce_RING_LL", AR, launches=(1, 0), device_ms=(30.0, 0.0)
            ),  # a collective: its own cause
            _row("gemm_a", "gemm", launches=(2, 0), device_ms=(10.0, 0.0)),
        ],
        appeared=[_row("gemm_c", "gemm", launches=(0, 3), device_ms=(0.0, 12.0))],
        launch_changes=[_row("gemm_b", "gemm", launches=(4, 3), device_ms=(5.0, 3.0))],
    )
    (cause,) = c.kernel_selection(diff)
    assert cause["summary"] == "gemm: gemm_a, gemm_b -> gemm_c"
    assert cause["evidence"] == {
        "op": "gemm",
        "baseline_kernels": ["gemm_a", "gemm_b"],
        "candidate_kernels": ["gemm_c"],
        "device_ms": [15.0, 12.0],
        "launches": [6.0, 3.0],
        "kernels": [
            {"name": "gemm_a", "launches": [2, 0], "device_ms": [10.0, 0.0]},
            {"name": "gemm_b", "launches": [4, 3], "device_ms": [5.0, 3.0]},
            {"name": "gemm_c", "launches": [0, 3], "device_ms": [0.0, 12.0]},
        ],
    }


def test_a_swap_counts_from_one_percent_of_each_sides_kernel_time():
    def swap(old, new):
        return c.kernel_selection(
            _diff(
                (100.0, 100.0),
                launch_changes=[
                    _row("gemm_a", "gemm", launches=(4, 3), device_ms=old),
                    _row("gemm_c", "gemm", launches=(1, 2), device_ms=new),
                ],
            )
        )

    assert len(swap((3.0, 2.0), (2.0, 3.0))) == 1  # each moved exactly 1.0 ms = 1% of 100: counts
    assert swap((10.0, 9.5), (2.0, 12.0)) == []  # the old kernel gave up 0.5 ms: under 1%
    assert swap((10.0, 0.0), (9.5, 10.0)) == []  # the new kernel took 0.5 ms: under 1%


def test_each_op_is_judged_on_its_own_and_every_new_kernel_is_named():
    rows = [
        _row("attn_a", "attention", launches=(4, 3), device_ms=(10.0, 9.9)),  # gave up 0.1 ms: no swap
        _row("attn_c", "attention", launches=(1, 2), device_ms=(1.0, 9.0)),
        _row("gemm_a", "gemm", launches=(2, 0), device_ms=(10.0, 0.0)),
        _row("gemm_c", "gemm", launches=(0, 1), device_ms=(0.0, 5.0)),
        _row("gemm_d", "gemm", launches=(0, 1), device_ms=(0.0, 5.0)),
    ]
    (cause,) = c.kernel_selection(_diff((100.0, 100.0), launch_changes=rows))
    assert cause["summary"] == "gemm: gemm_a -> gemm_c, gemm_d"
    gone = [_row("AllReduce_RING_LL", AR)]
    new = [_row("AllReduce_RING_SIMPLE", AR), _row("AllReduce_TREE_SIMPLE", AR)]
    (cause,) = c.collective_config(_diff(disappeared=gone, appeared=new))
    assert (
        cause["summary"]
        == "collective:all_reduce: AllReduce_RING_LL -> AllReduce_RING_SIMPLE, AllReduce_TREE_SIMPLE"
    )
