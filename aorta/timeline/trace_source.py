"""A trace file opened once: its first bytes sniffed and the rest read from the same stream (pure: no torch).

Every reader of ``aorta trace figures`` takes its bytes from here, so that what is true of one is true of all:

- the bytes are read once: the format is told from the first bytes (``Source.head``) and the reader goes on
  from the same stream (``Source.stream``, which serves those first bytes again), so a pipe
  (``<(zcat trace.json.gz)``, ``/dev/stdin``) reads as the file it carries;
- a gzip stream (``1f 8b``) is decompressed on the way, whatever the file is called (a ``.json.gz`` Kineto
  trace, a gzipped rocprofv3 CSV); a damaged one is refused in one line naming the file
  (``TraceFileError``), never a ``zlib.error`` traceback;
- a UTF-8 byte-order mark (``EF BB BF``, which Windows editors and some exporters write) is dropped.
"""

from __future__ import annotations

import gzip
import io
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

HEAD_BYTES = 4096
GZIP_MAGIC = b"\x1f\x8b"
UTF8_BOM = b"\xef\xbb\xbf"
# what a damaged gzip member raises: zlib.error (a corrupt deflate stream), BadGzipFile (CRC, header),
# EOFError (cut short)
DAMAGED_GZIP = (zlib.error, gzip.BadGzipFile, EOFError)


class TraceFileError(ValueError):
    """A trace file that cannot be read: the message names the file and what is wrong."""


class _Replayed(io.RawIOBase):
    """The bytes already read (the head), then the rest of the stream: one pass over the file."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self._head, self._rest = memoryview(head), rest

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        if self._head:
            n = min(len(b), len(self._head))
            b[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._rest.read(len(b))
        b[: len(data)] = data
        return len(data)


@dataclass
class Source:
    path: Path
    head: bytes  # the first bytes (decompressed, byte-order mark dropped): what the format is told from
    stream: BinaryIO  # every byte from the start (the head again, then the rest), decompressed
    gzipped: bool


def _read_head(path: Path, stream: BinaryIO) -> bytes:
    try:
        return stream.read(HEAD_BYTES)
    except DAMAGED_GZIP as exc:
        raise TraceFileError(damaged_gzip(path, exc)) from None
    except OSError as exc:
        raise TraceFileError(f"{path}: cannot read: {exc}") from None


def damaged_gzip(path: Path, exc: BaseException) -> str:
    """The one line for a gzip stream that cannot be decompressed."""
    kind = "zlib.error" if isinstance(exc, zlib.error) else type(exc).__name__
    return f"{path}: a damaged gzip file ({kind}: {exc})"


@contextmanager
def open_source(path: str | Path) -> Iterator[Source]:
    """The file at ``path`` opened once (a regular file or a pipe); ``TraceFileError`` naming it where it
    cannot be opened or its gzip stream is damaged at the start."""
    p = Path(path)
    try:
        raw = p.open("rb")
    except OSError as exc:
        raise TraceFileError(f"{p}: cannot read: {exc}") from None
    with raw:
        head = _read_head(p, raw)
        rest: BinaryIO = raw  # what follows the head
        gzipped = head[:2] == GZIP_MAGIC
        if gzipped:
            rest = gzip.GzipFile(fileobj=io.BufferedReader(_Replayed(head, raw)), mode="rb")  # type: ignore[assignment]
            head = _read_head(p, rest)
        if head.startswith(UTF8_BOM):
            head = head[len(UTF8_BOM) :]
        # the stream again from its start: the head (without its byte-order mark), then the rest
        yield Source(p, head, io.BufferedReader(_Replayed(head, rest), 1 << 20), gzipped)
