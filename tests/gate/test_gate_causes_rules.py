"""The cause rules one at a time, on hand-made evidence (pure): where a rule has no data it stays silent, and
what the unexplained verdict says it checked, word for word."""

from aorta.gate import causes as c

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
