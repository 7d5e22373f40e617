"""A trace's events checked before any figure is read (aorta/timeline/trace_check.py, issue 58): each refusal
word for word at its bound (a duration of 0 is a duration, a name cut at 60 characters), the profiler's steps
held to the rules whatever their category, flows held only in their own category, and an event of no read
category passed as written."""

from __future__ import annotations

import pytest

from aorta.timeline.trace_check import TraceEventError, checked_events, is_read

NAME = "k" * 70  # past the 60 characters a refusal quotes


def kernel(**kw):
    return {"ph": "X", "cat": "kernel", "name": NAME, "ts": 1.0, "dur": 2.0, "args": {"correlation": 7}, **kw}


def refusal(ev) -> str:
    with pytest.raises(TraceEventError) as exc:
        checked_events([{"ph": "M", "name": "process_name"}, ev])
    return str(exc.value)


@pytest.mark.parametrize(
    ("ev", "said"),
    [
        ([1, 2], "event 1 is [1, 2], not a JSON object"),
        ("x" * 50, 'event 1 is "' + "x" * 39 + ", not a JSON object"),  # the event cut at 40 characters
        (kernel(dur=-1), f"event 1 (kernel {'k' * 60!r}) has dur -1: a duration is a number >= 0"),
        (kernel(args=[1]), f"event 1 (kernel {'k' * 60!r}) has args [1], not an object"),
        (
            kernel(args={"correlation": "7"}),
            f"event 1 (kernel {'k' * 60!r}) has args.correlation '7', not an integer",
        ),
        (
            kernel(args={"correlation": True}),
            f"event 1 (kernel {'k' * 60!r}) has args.correlation True, not an integer",
        ),
        (kernel(ts=None), f"event 1 (kernel {'k' * 60!r}) has ts None, not a number"),
        ({"ph": "X", "cat": "KERNEL", "ts": 1.0}, "event 1 (kernel) has no name"),  # the category in any case
        ({"ph": "s", "cat": "ac2g", "ts": 1.0}, "event 1 (flow 's') has no id or no numeric ts"),
        ({"ph": "f", "cat": "ac2g", "id": 3}, "event 1 (flow 'f') has no id or no numeric ts"),
        ({"ph": "f", "cat": "ac2g", "id": 3, "ts": "1"}, "event 1 (flow 'f') has no id or no numeric ts"),
    ],
)
def test_an_event_that_breaks_the_rules_is_refused_naming_its_index_and_what(ev, said):
    assert refusal(ev) == said


def test_the_profilers_steps_are_held_to_the_rules_whatever_their_category():
    step = {"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#3", "ts": "late"}
    assert refusal(step) == "event 1 (cpu_op 'ProfilerStep#3') has ts 'late', not a number"
    not_a_step = {"ph": "X", "cat": "cpu_op", "name": "profilerstep#3", "ts": "late"}
    assert checked_events([not_a_step])[0] == [not_a_step]  # another CPU op: passed as written


@pytest.mark.parametrize(
    "ev",
    [
        kernel(dur=0),  # a duration of 0 is a duration
        kernel(args=None),
        {"ph": "X", "cat": "kernel", "name": "k", "ts": 1.0},  # no args: no correlation to check
        {"ph": "s", "cat": "python_function", "ts": "x"},  # a flow of another category is not read
        {"ph": "i", "cat": "ac2g", "ts": "x"},  # an instant of the flow category is not a flow end
        {"ph": "X", "cat": "python_function", "name": 3, "ts": None},  # a category no figure reads
        {"ph": "X", "name": "no category", "ts": None},
    ],
)
def test_an_event_within_the_rules_or_not_read_passes_as_written(ev):
    assert checked_events([ev]) == ([ev], {"events": 0, "device_ops": 0})


def test_an_exact_repeat_is_dropped_and_counted_a_near_one_kept():
    a = kernel()
    again = dict(a)
    other_args = kernel(args={"correlation": 8})
    flow = {"ph": "s", "cat": "ac2g", "id": 1, "ts": 1.0}
    events, dropped = checked_events([a, again, other_args, flow, dict(flow)])
    assert events == [a, other_args, flow]
    assert dropped == {"events": 2, "device_ops": 1}


@pytest.mark.parametrize(
    ("ev", "read"),
    [
        ({"ph": "X", "cat": "Kernel"}, True),
        ({"ph": "i", "cat": "kernel"}, False),  # not a complete event
        ({"ph": "X", "cat": "python_function"}, False),
        ({"ph": "s", "cat": "ac2g"}, True),  # a flow, whatever its phase
        ({"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#3"}, True),  # older Kineto's steps
        ({"ph": "X", "cat": "cpu_op", "name": "profilerstep#3"}, False),
        ({"ph": "X"}, False),
    ],
)
def test_an_event_is_read_where_a_figure_reads_it(ev, read):
    assert is_read(ev) is read


def test_only_complete_events_of_a_read_category_and_flows_are_deduplicated():
    instant = {"ph": "i", "cat": "kernel", "name": "marker", "ts": 1.0}
    events, dropped = checked_events([instant, dict(instant)])
    assert len(events) == 2 and dropped == {"events": 0, "device_ops": 0}
