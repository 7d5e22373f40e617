"""A damaged or malformed trace is one line naming the file and the event (issue 37), on copies of the real MI250
trace (../shared/amd_traces, skipped where absent; 14 kernels, small) damaged here; before, each gave a
``zlib.error``, ``TypeError``, ``KeyError`` or ``ValueError`` traceback naming no file."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from test_amd_traces import AMD_TRACES, MI250

from aorta.timeline.trace_events import DUPLICATES_KEY, TraceFileError, load_trace


@pytest.fixture(scope="module")
def mi250() -> tuple[bytes, dict]:
    path = AMD_TRACES / MI250
    if not path.is_file():
        pytest.skip(f"{path} is absent: the real AMD traces live beside the checkout (../shared/amd_traces)")
    raw = path.read_bytes()
    return raw, json.loads(gzip.decompress(raw))


def first(doc: dict, cat: str) -> int:
    return next(i for i, e in enumerate(doc["traceEvents"]) if e.get("cat") == cat)


def deflate_start(raw: bytes) -> int:
    """Where a gzip member's deflate stream begins: after the 10-byte header and, where flagged (FNAME), the
    original file name (RFC 1952; the MI250 file carries one)."""
    return raw.index(b"\0", 10) + 1 if raw[3] & 0x08 else 10


def written(tmp_path: Path, doc: dict) -> Path:
    p = tmp_path / "rank0.json.gz"
    p.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return p


@pytest.mark.parametrize(
    "offset, fill, error",
    [
        ("deflate", b"\xff", "zlib.error"),  # the first deflate block's header: block type 3 does not exist
        (None, bytes(64), "BadGzipFile"),  # 64 bytes zeroed mid-stream: the CRC no longer matches
    ],
)
def test_a_corrupt_gzip_file_names_the_file(mi250, tmp_path, offset, fill, error):
    raw, _ = mi250
    at = len(raw) // 2 if offset is None else deflate_start(raw)
    p = tmp_path / "rank0.json.gz"
    p.write_bytes(raw[:at] + fill + raw[at + len(fill) :])
    with pytest.raises(TraceFileError) as err:
        load_trace(p)
    assert str(err.value).startswith(f"{p}: a damaged gzip file ({error}: ")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda e: e.update(ts=None), "event {i} (kernel {name!r}) has ts None, not a number"),
        (lambda e: e.pop("name"), "event {i} (kernel) has no name"),
        (
            lambda e: e.update(dur=-3.5),
            "event {i} (kernel {name!r}) has dur -3.5: a duration is a number >= 0",
        ),
        (lambda e: e.update(ts="12"), "event {i} (kernel {name!r}) has ts '12', not a number"),
    ],
)
def test_a_malformed_kernel_event_names_the_file_and_the_events_index(mi250, tmp_path, damage, message):
    _, doc = mi250
    doc = json.loads(json.dumps(doc))
    i = first(doc, "kernel")
    name = doc["traceEvents"][i]["name"][:60]
    damage(doc["traceEvents"][i])
    p = written(tmp_path, doc)
    with pytest.raises(TraceFileError) as err:
        load_trace(p)
    assert str(err.value) == f"{p}: " + message.format(i=i, name=name)


def test_a_null_event_names_the_file_and_its_index(mi250, tmp_path):
    _, doc = mi250
    doc = json.loads(json.dumps(doc))
    doc["traceEvents"].insert(7, None)
    p = written(tmp_path, doc)
    with pytest.raises(TraceFileError, match=r"rank0\.json\.gz: event 7 is null, not a JSON object$"):
        load_trace(p)


def test_events_aorta_does_not_read_pass_as_written(mi250, tmp_path):
    """A CPU op without a name is no concern of the figures: the trace is read, not refused."""
    _, doc = mi250
    doc = json.loads(json.dumps(doc))
    doc["traceEvents"][first(doc, "cpu_op")].pop("name")
    assert len(load_trace(written(tmp_path, doc))["traceEvents"]) == len(doc["traceEvents"])


def test_duplicated_events_are_dropped_and_counted(mi250, tmp_path):
    _, doc = mi250
    doc = json.loads(json.dumps(doc))
    kernels = [e for e in doc["traceEvents"] if e.get("cat") == "kernel"]
    runtime = [e for e in doc["traceEvents"] if e.get("cat") == "cuda_runtime"]
    doc["traceEvents"] += kernels + runtime  # a merge tool that wrote some records twice
    loaded = load_trace(written(tmp_path, doc))
    assert sum(e.get("cat") == "kernel" for e in loaded["traceEvents"]) == 14
    assert loaded[DUPLICATES_KEY] == {"events": 14 + len(runtime), "device_ops": 14}
