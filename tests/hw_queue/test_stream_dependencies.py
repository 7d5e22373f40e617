"""stream_dependency's patterns, its dependency check and its figure (aorta/hw_queue/parts/stream_dependencies.py, pure):
known answers worked by hand."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from aorta.hw_queue.parts import stream_dependencies as deps

REPO = Path(__file__).resolve().parents[2]


def test_chain_puts_kernel_j_on_stream_j_mod_n_waiting_on_the_one_before():
    plan = deps.chain_plan(3, 7)
    assert [k.stream for k in plan] == [0, 1, 2, 0, 1, 2, 0]
    assert [k.waits for k in plan] == [(), (0,), (1,), (2,), (3,), (4,), (5,)]
    assert {k.role for k in plan} == {"chain"}
    assert all(k.waits == () for k in deps.chain_plan(3, 7, "none"))


def test_fan_levels_root_fans_join():
    plan = deps.fan_plan(3, 2)
    # level 0: root 0 (stream 0), fans 1-3 (streams 0-2) wait on 0, join 4 (stream 0) waits on 1-3; level 1 from 5
    assert [(k.index, k.stream, k.role, k.level, k.waits) for k in plan] == [
        (0, 0, "root", 0, ()),
        (1, 0, "fan", 0, (0,)),
        (2, 1, "fan", 0, (0,)),
        (3, 2, "fan", 0, (0,)),
        (4, 0, "join", 0, (1, 2, 3)),
        (5, 0, "root", 1, ()),
        (6, 0, "fan", 1, (5,)),
        (7, 1, "fan", 1, (5,)),
        (8, 2, "fan", 1, (5,)),
        (9, 0, "join", 1, (6, 7, 8)),
    ]
    assert deps.required_edges(deps.fan_plan(3, 2, "none")) == set()


def test_chain_length_is_a_multiple_of_the_streams_with_two_per_stream_at_least():
    assert deps.chain_kernels(1, 128) == 128
    assert deps.chain_kernels(3, 16) == 15
    assert deps.chain_kernels(32, 16) == 64  # two per stream, more than asked


@pytest.mark.parametrize(
    "args,message",
    [
        (("chain", 0, 4, 1, "events"), "need at least one stream, got 0"),
        (("chain", 2, 0, 1, "events"), "kernels must be >= 1, got 0"),
        (("fan", 2, 4, 0, "events"), "levels must be >= 1, got 0"),
        (("fan", 2, 4, 1, "maybe"), "dependencies must be one of ('events', 'none'), got 'maybe'"),
        (("ring", 2, 4, 1, "events"), "pattern must be one of ('chain', 'fan'), got 'ring'"),
    ],
)
def test_a_bad_pattern_names_what_is_wrong(args, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        deps.plan_for(*args)


def test_missing_edges_name_the_kernels_that_did_not_wait():
    plan = deps.fan_plan(2, 1)  # root 0, fans 1 (s0) and 2 (s1), join 3 waits on 1 and 2
    issued = [(0, 1), (0, 2), (1, 3)]
    assert deps.missing_edges(plan, issued) == [(2, 3)]
    assert deps.dependency_failure(plan, issued) == (
        "dependency order not honoured: 1 of 4 waits missing: kernel 3 (join, stream 0) did not wait on "
        "kernel 2 (stream 1)"
    )
    assert deps.dependency_failure(plan, [*issued, (2, 3)]) is None
    # extra waits (a relay, a repeat) are no failure; five missing show three and the count of the rest
    assert deps.dependency_failure(plan, [*issued, (2, 3), (0, 3)]) is None
    many = deps.dependency_failure(deps.chain_plan(2, 6), [])
    assert many is not None and many.endswith("did not wait on kernel 2 (stream 0) and 2 more")


def test_expected_values_by_hand():
    # chain: 0.5 + 1, + 1 ...
    assert deps.expected_values(deps.chain_plan(2, 4), 2) == [1.5, 2.5, 3.5, 4.5]
    # fan over 3 streams: weights 1/6, 2/6, 3/6; root 1.5, fans 0.25 0.5 0.75, join 1.5, next root 2.5 ...
    assert deps.fan_weights(3) == pytest.approx([1 / 6, 2 / 6, 3 / 6])
    values = deps.expected_values(deps.fan_plan(3, 2), 3)
    assert values == pytest.approx([1.5, 0.25, 0.5, 0.75, 1.5, 2.5, 2.5 / 6, 5.0 / 6, 1.25, 2.5])


def test_dependent_kernels_on_the_critical_path():
    assert deps.dependent_kernels("chain", 128, 16) == 127
    assert deps.dependent_kernels("fan", 128, 16) == 32
    with pytest.raises(ValueError, match="pattern must be one of"):
        deps.dependent_kernels("ring", 1, 1)


def test_added_microseconds_per_dependent_kernel_known_answer():
    # 100 kernels, 99 dependent; rounds of 412, 436 and 404 us against a reference of 2.12 us a kernel (212 us)
    value, samples = deps.added_us_per_dependent_kernel([412.0, 436.0, 404.0], 2.12, 100, 99)
    assert value == pytest.approx(200.0 / 99)
    assert samples == pytest.approx((200.0 / 99, 224.0 / 99, 192.0 / 99))
    # a chain of 126 kernels (3 streams) against a one-stream reference of 128 at 1.5 us a kernel: 189 us
    value, _ = deps.added_us_per_dependent_kernel([314.0], 1.5, 126, 125)
    assert value == pytest.approx(1.0)
    # faster than the reference reads negative, never clamped
    value, samples = deps.added_us_per_dependent_kernel([190.0, 200.0], 21.2, 10, 4)
    assert value == pytest.approx(-4.25) and samples == pytest.approx((-5.5, -3.0))
    with pytest.raises(ValueError, match="must be >= 1, got 10 and 0"):
        deps.added_us_per_dependent_kernel([1.0], 0.5, 10, 0)
    with pytest.raises(ValueError, match="no timed rounds"):
        deps.added_us_per_dependent_kernel([], 0.5, 3, 3)


def test_the_pure_module_does_not_import_torch():
    code = "import sys; import aorta.hw_queue.parts.stream_dependencies; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, env={"PYTHONPATH": str(REPO)})


def test_one_stream_and_one_kernel_are_allowed():
    plan = deps.plan_for("chain", 1, 3, 1, "events")
    assert [(k.stream, k.level, k.waits) for k in plan] == [(0, 0, ()), (0, 1, (0,)), (0, 2, (1,))]
    assert deps.plan_for("chain", 2, 4, 1, "none") == [deps.Kernel(j, j % 2, "chain", j) for j in range(4)]
    assert [k.role for k in deps.plan_for("fan", 1, 9, 1, "events")] == ["root", "fan", "join"]
    # one dependent kernel, one kernel: the smallest figure there is
    assert deps.added_us_per_dependent_kernel([5.0], 2.0, 1, 1) == (3.0, (3.0,))


def test_two_missing_waits_are_both_named():
    plan = deps.chain_plan(2, 3)  # kernel 1 waits on 0, kernel 2 on 1
    assert deps.dependency_failure(plan, [], shown=2) == (
        "dependency order not honoured: 2 of 2 waits missing: kernel 1 (chain, stream 1) did not wait on "
        "kernel 0 (stream 0), kernel 2 (chain, stream 0) did not wait on kernel 1 (stream 1)"
    )


def test_an_empty_run_is_refused_by_name():
    with pytest.raises(ValueError, match="^no timed rounds to read$"):
        deps.added_us_per_dependent_kernel([], 0.5, 3, 3)
