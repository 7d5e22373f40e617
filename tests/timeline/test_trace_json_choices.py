"""A Chrome trace's JSON read as a stream (aorta/timeline/trace_json.py, issue 58): times on the epoch clock
whose ns a float cannot hold (positive and negative, a fraction of 1, 2, 3 and 4 digits, at and past 2^40 µs),
what is and is not a whole ns, every refusal word for word with its line and column (also past the first
window, at chunk sizes that split values and characters), and which events are kept and held once."""

from __future__ import annotations

import io
import json
from unittest import mock

import pytest

from aorta.timeline import trace_json
from aorta.timeline.trace_json import (
    EXACT_BELOW_US,
    ExactUs,
    TraceJSONError,
    ns_of,
    parse_float,
    read_trace_json,
)


# --------------------------------------------------------------------------- times in µs, their ns
@pytest.mark.parametrize(
    "text, ns",
    [
        ("1758927066581847.260", 1_758_927_066_581_847_260),
        ("1758927066581847.2", 1_758_927_066_581_847_200),
        ("1758927066581847.26", 1_758_927_066_581_847_260),
        ("1758927066581847.2609", 1_758_927_066_581_847_260),  # past the ns: below the clock's step, dropped
        ("1758927066581847.0", 1_758_927_066_581_847_000),
        ("-1758927066581847.261", -1_758_927_066_581_847_261),
        ("1099511627776.001", 1_099_511_627_776_001),  # 2^40 µs exactly: held as text
    ],
)
def test_a_time_past_2_to_the_40_us_keeps_the_ns_its_text_wrote(text, ns):
    value = parse_float(text)
    assert isinstance(value, ExactUs) and value == float(text) and value.ns == ns and ns_of(value) == ns


@pytest.mark.parametrize("text", ["1099511627775.5", "1758.25", "-3.5", "1.758927066581847e15", "1E15"])
def test_a_time_below_2_to_the_40_us_or_with_an_exponent_is_a_plain_float(text):
    value = parse_float(text)
    assert type(value) is float and value == float(text)


def test_ns_of_a_number():
    assert EXACT_BELOW_US == 2.0**40
    assert ns_of(1234) == 1_234_000 and ns_of(-3) == -3000 and ns_of(0) == 0
    assert ns_of(1234.567) == 1_234_567 and ns_of(-1234.567) == -1_234_567
    assert ns_of(2.0**40 - 0.5) == (2**40) * 1000 - 500  # the largest floats held to the ns
    assert ns_of(2.0**40) is None and ns_of(-(2.0**40)) is None  # a float past them, without its text
    assert ns_of(304.6875) is None and ns_of(0.0001) is None  # finer than the ns
    assert ns_of(True) is None and ns_of("12") is None and ns_of(None) is None


def test_a_float_up_to_two_steps_off_a_whole_ns_is_that_ns_and_three_steps_off_is_not():
    """1234.567 µs and the floats 1, 2 and 3 steps above it: times 1000 they are 0, 1, 2 and 3 steps of the
    result off 1234567 ns (the float's own rounding, not a finer time)."""
    steps = [1234.567, 1234.5670000000002, 1234.5670000000005, 1234.5670000000007]
    assert [ns_of(us) for us in steps] == [1_234_567, 1_234_567, 1_234_567, None]


def test_a_time_of_exactly_2_to_the_40_us_keeps_its_text():
    value = parse_float("1099511627776.0")
    assert isinstance(value, ExactUs) and ns_of(value) == 1_099_511_627_776_000


# --------------------------------------------------------------------------- documents read
def read(text: str, take=lambda i, ev: True, chunk: int | None = None) -> dict:
    stream = io.BytesIO(text.encode())
    if chunk is None:
        return read_trace_json(stream, take)
    with mock.patch.object(trace_json, "CHUNK_BYTES", chunk):
        return read_trace_json(stream, take)


def refusal(text: str, chunk: int | None = None) -> str:
    with pytest.raises(TraceJSONError) as exc:
        read(text, chunk=chunk)
    return str(exc.value)


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 64, None])
def test_a_document_reads_as_json_reads_it_at_any_chunk_size(chunk):
    text = (
        ' \n {"schemaVersion": 1, "traceEvents": [ {"ph": "X", "name": "é€😀", "ts": 1758927066581847.260, '
        '"dur": 1.5e3, "args": {"grid": [1, 2, 3]}} ,\n{"ph": "i", "ts": -7} ], "x": {"y": [true, null]}, '
        '"n": 123456789012345678901234567890} \n'
    )
    text = text.replace('"x":', '"long": "' + "é" * 150 + '", "x":')  # a string longer than the look-ahead
    doc = read(text, chunk=chunk)
    assert doc == json.loads(text)
    assert doc["traceEvents"][0]["ts"].ns == 1_758_927_066_581_847_260


def test_a_bare_list_and_empty_lists_and_objects():
    assert read("[]") == {"traceEvents": []}
    assert read(' [ {"a": 1} ] ') == {"traceEvents": [{"a": 1}]}
    assert read("{}") == {}
    assert read('{"traceEvents": []}') == {"traceEvents": []}
    assert read('{"traceEvents": 5}') == {"traceEvents": 5}  # no list: the loader says so


def test_take_sees_every_event_by_index_and_only_the_kept_are_held():
    seen = []

    def take(i, ev):
        seen.append((i, ev))
        return i % 2 == 1

    doc = read('{"traceEvents": [{"i": 0}, {"i": 1}, 7, {"i": 3}], "after": 1}', take)
    assert seen == [(0, {"i": 0}), (1, {"i": 1}), (2, 7), (3, {"i": 3})]
    assert doc == {"traceEvents": [{"i": 1}, {"i": 3}], "after": 1}
    assert doc["traceEvents"][0] is seen[1][1]  # the event take saw, not a copy


def test_kept_events_hold_each_key_and_short_string_once():
    long = "x" * 33
    doc = read(
        json.dumps({"traceEvents": [{"cat": "kernel", "n": "y" * 32, "l": long, "a": [["kernel"]]}] * 2})
    )
    a, b = doc["traceEvents"]
    assert a == b and a is not b
    assert [k for k in a] == ["cat", "n", "l", "a"] and all(ka is kb for ka, kb in zip(a, b))
    assert a["cat"] is b["cat"] and a["n"] is b["n"] and a["a"][0][0] is b["cat"]
    assert a["l"] == b["l"] == long


# --------------------------------------------------------------------------- refused, naming where
@pytest.mark.parametrize(
    "text, said",
    [
        ("", "a JSON object or list of events expected, found an empty file"),
        ("  \n x", "a JSON object or list of events expected, found 'x' at line 2 column 2"),
        ('{"traceEvents": [1] x', "after the value of 'traceEvents' at line 1 column 21: expected ',' or '}', found 'x'"),
        ('{"a": 1', "after the value of 'a' at line 1 column 8: expected ',' or '}', found the end of the file (cut short)"),
        ('{"a" 1}', "after key 'a' at line 1 column 6: expected ':', found '1'"),
        ("{1: 2}", "a key of the top-level object at line 1 column 3 is not a string"),
        ('{"traceEvents": {"a": 1}}', None),
        ('[1 2]', "after event 0 of traceEvents at line 1 column 4: expected ',' or ']', found '2'"),
        ('[1,\n  2,\n  tru]', "event 2 of traceEvents at line 3 column 3: Expecting value"),
        ('[1,\n  {"a": "b', "event 1 of traceEvents at line 2 column 9: the file ends inside it (cut short)"),
        ('[1,\n  {"a": 1', "event 1 of traceEvents at line 2 column 10: the file ends inside it (cut short)"),
        ('[1] ]', "more after the end of the JSON document at line 1 column 5"),
        ('[1, t', "event 1 of traceEvents at line 1 column 5: the file ends inside it (cut short)"),
        ("{}x", "more after the end of the JSON document at line 1 column 3"),
        ('{"a": 1, tru}', "a key of the top-level object at line 1 column 10: Expecting value"),
        ('\n[1 2,\n 3,\n 4]', "after event 0 of traceEvents at line 2 column 4: expected ',' or ']', found '2'"),
        ('\nx', "a JSON object or list of events expected, found 'x' at line 2 column 1"),
        ('{"traceEvents": [], "traceEvents": [1]}', "a second 'traceEvents' at line 1 column 35: one trace, one list of events"),
        ('{"x": tru}', "the value of 'x' at line 1 column 7: Expecting value"),
        ('{"traceEvents": x}', "the value of 'traceEvents' at line 1 column 17: Expecting value"),
        ('{"traceEvents": [', "event 0 of traceEvents at line 1 column 18: the file ends inside it (cut short)"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("chunk", [1, 4, None])
def test_a_document_that_is_no_trace_is_refused_naming_the_place(text, said, chunk):
    if said is None:
        assert read(text, chunk=chunk) == {"traceEvents": {"a": 1}}
        return
    assert refusal(text, chunk) == said


def test_the_place_is_counted_past_the_first_windows():
    """40 lines of events read in chunks of 16 characters: the window has moved on many times."""
    lines = ['{"traceEvents": ['] + ['  {"ph": "X", "ts": 1},'] * 40 + ['  {"ph": "X", "ts": 1} x']
    text = "\n".join(lines)
    for chunk in (16, 1 << 20):
        assert (
            refusal(text, chunk)
            == "after event 40 of traceEvents at line 42 column 24: expected ',' or ']', found 'x'"
        )


@pytest.mark.parametrize("chunk", [16, 100, 1 << 20])
def test_the_column_of_a_one_line_trace_counts_from_the_line_not_the_window(chunk):
    """json.dump writes a trace on one line: past the first window the column went on from the window's
    start (it named a column a window's length too small)."""
    text = '{"traceEvents": [' + '{"ph": "X", "ts": 1}, ' * 40 + '{"ph": "X", "ts": 1} x\n\n]}'
    column = text.index(" x\n") + 2  # 1-based
    assert (
        refusal(text, chunk)
        == f"after event 40 of traceEvents at line 1 column {column}: expected ',' or ']', found 'x'"
    )


def test_bytes_cut_inside_a_character_at_the_end_are_no_utf8():
    with pytest.raises(UnicodeDecodeError):
        read_trace_json(io.BytesIO('{"traceEvents": ["é'.encode()[:-1]), lambda i, e: True)


def test_a_number_split_across_chunks_is_read_whole():
    """1.5e3 cut after ``1``, ``1.``, ``1.5`` and ``1.5e``: each read on with the next chunk."""
    text = '{"traceEvents": [], "n": 1.5e3}'
    start = text.index("1.5e3")
    for cut in range(start + 1, start + 5):
        with mock.patch.object(trace_json, "CHUNK_BYTES", cut):
            assert read_trace_json(io.BytesIO(text.encode()), lambda i, e: True)["n"] == 1500.0


@pytest.mark.parametrize("chunk", [5, 8, 16])
def test_the_column_after_short_lines_dropped_together_counts_from_the_last_of_them(chunk):
    text = "[\n1,\n2,\n3," + "4, " * 200 + "5 x]"  # the window moves on past all three newlines at once
    last = text.split("\n")[-1]
    assert refusal(text, chunk) == (
        f"after event 203 of traceEvents at line 4 column {last.index('x') + 1}: expected ',' or ']', found 'x'"
    )
