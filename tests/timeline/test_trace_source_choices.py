"""A trace file opened once (aorta/timeline/trace_source.py, issue 58): the first bytes told apart from the rest
by length and content (a file longer than the head, bytes that differ at each position), gzip told by its
first two bytes whatever the name, a byte-order mark dropped from the head and the stream alike, a pipe read
once, and each failure refused in one line naming the file."""

from __future__ import annotations

import gzip
import os
import threading
import zlib
from pathlib import Path

import pytest

from aorta.timeline.trace_source import (
    GZIP_MAGIC,
    HEAD_BYTES,
    UTF8_BOM,
    TraceFileError,
    damaged_gzip,
    open_source,
)

# bytes that differ at every position of the head and past it: a byte read twice or skipped shows
BODY = bytes((i * 7 + i // 251) % 256 for i in range(3 * HEAD_BYTES + 123))


def written(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_the_head_is_the_first_4_kib_and_the_stream_every_byte_from_the_start(tmp_path):
    assert HEAD_BYTES == 4096
    with open_source(written(tmp_path / "t.bin", BODY)) as s:
        assert (s.path, s.head, s.gzipped) == (tmp_path / "t.bin", BODY[:4096], False)
        assert s.stream.read() == BODY


def test_the_stream_read_a_few_bytes_at_a_time_is_the_file(tmp_path):
    with open_source(written(tmp_path / "t", BODY)) as s:
        parts = iter(lambda: s.stream.read(1000), b"")
        assert b"".join(parts) == BODY


@pytest.mark.parametrize("name", ["trace.json.gz", "trace.json", "kernel_trace.csv"])
def test_a_gzip_stream_is_decompressed_whatever_the_file_is_called(tmp_path, name):
    with open_source(written(tmp_path / name, gzip.compress(BODY))) as s:
        assert s.gzipped and s.head == BODY[:4096]
        assert b"".join(iter(lambda: s.stream.read(777), b"")) == BODY


def test_a_gzip_stream_read_through_small_reads_of_its_own_is_whole(tmp_path):
    """A gzip of incompressible bytes: the compressed head (4 KiB) is handed to the decompressor in the
    pieces it asks for, then the rest of the file."""
    data = os.urandom(5 * HEAD_BYTES)
    with open_source(written(tmp_path / "t.gz", gzip.compress(data))) as s:
        assert s.head == data[:4096] and s.stream.read() == data


def test_the_magic_counts_only_at_the_start(tmp_path):
    data = b"x" + GZIP_MAGIC + b"rest"
    with open_source(written(tmp_path / "t.gz", data)) as s:
        assert not s.gzipped and s.head == data and s.stream.read() == data


def test_a_byte_order_mark_is_dropped_from_the_head_and_the_stream(tmp_path):
    assert UTF8_BOM == b"\xef\xbb\xbf"
    with open_source(written(tmp_path / "t.json", UTF8_BOM + b'{"traceEvents": []}')) as s:
        assert s.head == b'{"traceEvents": []}' and s.stream.read() == b'{"traceEvents": []}'
    with open_source(written(tmp_path / "t.json.gz", gzip.compress(UTF8_BOM + BODY))) as s:
        assert s.head == BODY[:4093] and s.stream.read() == BODY
    with open_source(written(tmp_path / "mid.json", b"{}" + UTF8_BOM)) as s:  # only at the start
        assert s.stream.read() == b"{}" + UTF8_BOM


def test_an_empty_file_has_an_empty_head_and_stream(tmp_path):
    with open_source(written(tmp_path / "empty", b"")) as s:
        assert (s.head, s.stream.read(), s.gzipped) == (b"", b"", False)


def test_a_pipe_is_read_once_from_its_first_byte(tmp_path):
    r, w = os.pipe()

    def feed() -> None:
        with os.fdopen(w, "wb") as f:
            f.write(BODY)

    threading.Thread(target=feed, daemon=True).start()
    with open_source(f"/dev/fd/{r}") as s:
        assert s.path == Path(f"/dev/fd/{r}") and s.head == BODY[:4096] and s.stream.read() == BODY
    os.close(r)


def test_a_file_that_cannot_be_opened_or_read_is_refused_naming_it(tmp_path):
    missing = tmp_path / "nowhere.json"
    with pytest.raises(TraceFileError) as exc:
        with open_source(missing):
            pass
    assert str(exc.value) == f"{missing}: cannot read: [Errno 2] No such file or directory: '{missing}'"
    with pytest.raises(TraceFileError) as exc:
        with open_source(tmp_path):
            pass
    assert str(exc.value).startswith(f"{tmp_path}: cannot read: [Errno 21] Is a directory")


@pytest.mark.parametrize(
    "data, kind",
    [
        (GZIP_MAGIC + b"\x09" + b"\x00" * 20, "BadGzipFile"),  # an unknown compression method
        (gzip.compress(BODY, mtime=0)[:12] + b"\xff" * 40, "zlib.error"),  # a damaged deflate stream
        (gzip.compress(BODY, mtime=0)[:30], "EOFError"),  # cut short inside its first 4 KiB
    ],
    ids=["unknown-method", "damaged-deflate", "cut-short"],  # no clock in an id: workers collect alike
)
def test_a_gzip_damaged_at_its_start_is_refused_in_one_line_naming_the_file(tmp_path, data, kind):
    path = written(tmp_path / "t.json.gz", data)
    with pytest.raises(TraceFileError) as exc:
        with open_source(path):
            pass
    assert str(exc.value).startswith(f"{path}: a damaged gzip file ({kind}: ")


def test_the_damaged_gzip_line_names_zlib_error_by_its_module_and_others_by_their_type():
    assert damaged_gzip(Path("a.gz"), zlib.error("bad")) == "a.gz: a damaged gzip file (zlib.error: bad)"
    assert damaged_gzip(Path("b.gz"), EOFError("cut")) == "b.gz: a damaged gzip file (EOFError: cut)"


def test_the_replayed_stream_serves_the_head_then_the_rest_through_any_buffer():
    """Read through a 7-byte buffer: the head in pieces, each byte once, then the rest."""
    import io

    from aorta.timeline.trace_source import _Replayed

    stream = io.BufferedReader(_Replayed(BODY[:100], io.BytesIO(BODY[100:])), buffer_size=7)
    assert b"".join(iter(lambda: stream.read(3), b"")) == BODY


def test_a_read_that_fails_after_opening_is_refused_naming_the_file():
    from aorta.timeline.trace_source import _read_head

    class Failing:
        def read(self, n: int) -> bytes:
            raise OSError(5, "Input/output error")

    with pytest.raises(TraceFileError) as exc:
        _read_head(Path("t.json"), Failing())  # type: ignore[arg-type]
    assert str(exc.value) == "t.json: cannot read: [Errno 5] Input/output error"
