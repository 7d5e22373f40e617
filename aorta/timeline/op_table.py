"""Device ops held as columns: a trace of millions of ops in tens of bytes each (pure: no torch; numpy).

A ``DeviceOp`` object costs about 370 bytes (the object, the floats and ints it points at); an op here costs
about 90: one numpy column per field, and every value that repeats (kernel names, streams, devices, launch dims,
a collective's metadata) held once in a table and named by its index. ``OpTable`` reads as the list of
``DeviceOp`` it holds (``len``, indexing, iteration, ``==`` with a list), each op built when it is read, with the
very values the readers gave (a float column holds the float, an int column the int); the figures take its
columns whole (``columns``, ``take``) without building the ops. ``OpTableBuilder`` is appended to row by row by
the readers (``array.array`` columns: 8 bytes a value while reading).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from aorta.timeline.device_op import DeviceOp
from aorta.timeline.trace_events import COMM_KINDS, COMPUTE, MEMORY, classify_kernel

CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
LINKS = (None, "correlation", "flow")
KINDS = (COMPUTE, MEMORY, *COMM_KINDS)  # what ``kind_codes`` index
NONE = -1  # a table index that names no value
_CHUNK = 65_536  # ops built at a time when iterating


class Interned:
    """Values held once, each named by its index: equal values of different types (``1``, ``1.0``, ``"1"``)
    stay apart, as the profiler wrote them."""

    def __init__(self) -> None:
        self.values: list[Any] = []
        self._index: dict[Any, int] = {}

    def index(self, value: Any) -> int:
        if value is None:
            return NONE
        try:
            key: Any = (type(value), value)
            hash(key)
        except TypeError:  # a list or dict where a profiler writes a number: held by its text
            key = (type(value), repr(value))
        i = self._index.get(key)
        if i is None:
            i = self._index[key] = len(self.values)
            self.values.append(value)
        return i


@dataclass(frozen=True)
class Tables:
    """The values the columns name by index, shared by a table and every table taken from it."""

    names: list[str]
    streams: list[Any]
    devices: list[Any]
    dims: list[tuple[int, ...]]
    metas: list[tuple]  # (collective, message_bytes, group_size, process_group)


# every column, with its dtype; ``has_*`` says where the nullable column beside it holds a value
COLUMNS = {
    "name": np.int32,
    "stream": np.int32,
    "start_us": np.float64,
    "dur_us": np.float64,
    "category": np.int8,
    "grid": np.int32,
    "block": np.int32,
    "meta": np.int32,
    "launch_us": np.float64,  # NaN: no launch in the trace
    "correlation": np.int64,
    "has_correlation": np.bool_,
    "queue": np.int64,
    "has_queue": np.bool_,
    "link": np.int8,
    "device": np.int32,
    "start_ns": np.int64,
    "has_start_ns": np.bool_,
    "dur_ns": np.int64,
    "has_dur_ns": np.bool_,
}
_TYPECODES = {np.int32: "i", np.float64: "d", np.int8: "b", np.int64: "q", np.bool_: "b"}
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _fits(value: int | None) -> bool:
    return value is not None and INT64_MIN <= value <= INT64_MAX


class OpTableBuilder:
    """Rows appended one at a time (``add``), then ``table()``."""

    def __init__(self) -> None:
        self._cols: dict[str, array[Any]] = {
            name: array(_TYPECODES[dtype]) for name, dtype in COLUMNS.items()
        }
        self._names, self._streams, self._devices = Interned(), Interned(), Interned()
        self._dims, self._metas = Interned(), Interned()

    def __len__(self) -> int:
        return len(self._cols["name"])

    def add(
        self,
        name: str,
        stream: Any,
        start_us: float,
        dur_us: float,
        category: str = "kernel",
        grid: tuple[int, ...] | None = None,
        block: tuple[int, ...] | None = None,
        collective: str | None = None,
        message_bytes: int | None = None,
        group_size: int | None = None,
        process_group: str | None = None,
        launch_us: float | None = None,
        correlation: int | None = None,
        queue: int | None = None,
        link: str | None = None,
        device: Any = None,
        start_ns: int | None = None,
        dur_ns: int | None = None,
    ) -> None:
        c = self._cols
        c["name"].append(self._names.index(name))
        c["stream"].append(self._streams.index(stream))
        c["start_us"].append(start_us)
        c["dur_us"].append(dur_us)
        c["category"].append(CATEGORIES.index(category))
        c["grid"].append(self._dims.index(grid))
        c["block"].append(self._dims.index(block))
        meta = (collective, message_bytes, group_size, process_group)
        c["meta"].append(NONE if meta == (None, None, None, None) else self._metas.index(meta))
        c["launch_us"].append(float("nan") if launch_us is None else launch_us)
        for key, value in (("correlation", correlation), ("queue", queue)):
            if value is not None and not _fits(value):
                raise ValueError(f"{key} {value} does not fit a 64-bit integer")
            c[key].append(value if value is not None else 0)
            c["has_" + key].append(value is not None)
        c["link"].append(LINKS.index(link))
        c["device"].append(self._devices.index(device))
        exact = _fits(start_ns) and _fits(dur_ns if dur_ns is not None else 0)  # else read as the floats
        c["start_ns"].append(start_ns if exact else 0)
        c["has_start_ns"].append(exact)
        c["dur_ns"].append(dur_ns if exact and dur_ns is not None else 0)
        c["has_dur_ns"].append(exact and dur_ns is not None)

    def column_arrays(self) -> dict[str, np.ndarray]:
        """The columns read so far, as arrays over the builder's own memory."""
        return {name: np.frombuffer(self._cols[name], dtype=dtype) if len(self._cols[name]) else
                np.empty(0, dtype) for name, dtype in COLUMNS.items()}  # fmt: skip

    def taken(self, rows: np.ndarray) -> OpTable:
        """``table().take(rows)`` with each column let go as soon as it is taken (a trace's ops are held once
        and one column more, not twice); the builder is empty after."""
        cols = {}
        for name, dtype in COLUMNS.items():
            read: np.ndarray = (
                np.frombuffer(self._cols[name], dtype=dtype) if len(self._cols[name]) else np.empty(0, dtype)
            )
            cols[name] = read[rows]
            del read
            self._cols[name] = array(_TYPECODES[dtype])
        return OpTable(cols, self._tables())

    def _tables(self) -> Tables:
        return Tables(
            self._names.values,
            self._streams.values,
            self._devices.values,
            self._dims.values,
            self._metas.values,
        )

    def table(self) -> OpTable:
        """The rows read so far (over the builder's memory: append no more)."""
        return OpTable(self.column_arrays(), self._tables())


class OpTable(Sequence[DeviceOp]):
    """Device ops as columns (``columns``: name -> numpy array, one row per op) over shared ``tables``."""

    def __init__(self, columns: dict[str, np.ndarray], tables: Tables) -> None:
        self.columns, self.tables = columns, tables
        self._kinds: np.ndarray | None = None

    @classmethod
    def of(cls, ops: Iterable[DeviceOp]) -> OpTable:
        """The ops given, as a table (a table is returned as it is; rows of one are taken)."""
        if isinstance(ops, OpTable):
            return ops
        if isinstance(ops, OpRows):
            return ops.table()
        b = OpTableBuilder()
        for op in ops:
            meta = (op.collective, op.message_bytes, op.group_size, op.process_group)
            b.add(op.name, op.stream, op.start_us, op.dur_us, op.category, op.grid, op.block, *meta,
                  op.launch_us, op.correlation, op.queue, op.link, op.device, op.start_ns, op.dur_ns)  # fmt: skip
        return b.table()

    def __len__(self) -> int:
        return len(self.columns["name"])

    def __getitem__(self, i):
        if isinstance(i, (int, np.integer)):
            n = len(self)
            if not -n <= i < n:
                raise IndexError("op index out of range")
            return self._ops(np.array([i % n]))[0]
        if isinstance(i, slice):
            return self.take(np.arange(len(self))[i])
        return self.take(np.asarray(i))

    def __iter__(self) -> Iterator[DeviceOp]:
        for lo in range(0, len(self), _CHUNK):
            yield from self._ops(np.arange(lo, min(lo + _CHUNK, len(self))))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (OpTable, list, tuple)):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"OpTable({len(self)} ops)"

    def take(self, rows: np.ndarray) -> OpTable:
        """The ops at ``rows`` (indices, or a mask), in that order, sharing this table's value tables."""
        return OpTable({k: v[rows] for k, v in self.columns.items()}, self.tables)

    def with_columns(self, **columns: np.ndarray) -> OpTable:
        return OpTable({**self.columns, **columns}, self.tables)

    @property
    def end_us(self) -> np.ndarray:
        return self.columns["start_us"] + self.columns["dur_us"]

    def kind_codes(self) -> np.ndarray:
        """Each op's kind as an index into ``KINDS`` (``DeviceOp.kind``), classified once per name and
        collective."""
        if self._kinds is None:
            c = self.columns
            collective = [m[0] for m in self.tables.metas] + [None]  # [-1]: no metadata
            width = len(collective)
            pairs, inverse = np.unique(
                c["name"].astype(np.int64) * width + c["meta"] + 1, return_inverse=True
            )
            codes = np.array(
                [KINDS.index(classify_kernel(self.tables.names[p // width], collective[p % width - 1]))
                 for p in pairs.tolist()],
                dtype=np.int8,
            )  # fmt: skip
            kinds = codes[inverse.reshape(-1)] if len(self) else np.empty(0, np.int8)
            self._kinds = np.where(c["category"] != 0, np.int8(KINDS.index(MEMORY)), kinds)
        return self._kinds

    def devices(self) -> list[Any]:
        """The device of each op (None where it names none), as ``DeviceOp.device``."""
        values = np.array([*self.tables.devices, None], dtype=object)
        return list(values[self.columns["device"]])

    def _ops(self, rows: np.ndarray) -> list[DeviceOp]:
        c, t = self.columns, self.tables
        col = {k: v[rows].tolist() for k, v in c.items()}
        names, streams, devices, dims, metas = t.names, t.streams, t.devices, t.dims, t.metas
        none_meta = (None, None, None, None)
        out = []
        for i in range(len(rows)):
            meta = metas[col["meta"][i]] if col["meta"][i] != NONE else none_meta
            launch = col["launch_us"][i]
            out.append(
                DeviceOp(
                    name=names[col["name"][i]],
                    stream=streams[col["stream"][i]] if col["stream"][i] != NONE else None,  # type: ignore[arg-type]
                    start_us=col["start_us"][i],
                    dur_us=col["dur_us"][i],
                    category=CATEGORIES[col["category"][i]],
                    grid=dims[col["grid"][i]] if col["grid"][i] != NONE else None,
                    block=dims[col["block"][i]] if col["block"][i] != NONE else None,
                    collective=meta[0],
                    message_bytes=meta[1],
                    group_size=meta[2],
                    process_group=meta[3],
                    launch_us=None if launch != launch else launch,  # NaN: none
                    correlation=col["correlation"][i] if col["has_correlation"][i] else None,
                    queue=col["queue"][i] if col["has_queue"][i] else None,
                    link=LINKS[col["link"][i]],
                    device=devices[col["device"][i]] if col["device"][i] != NONE else None,
                    start_ns=col["start_ns"][i] if col["has_start_ns"][i] else None,
                    dur_ns=col["dur_ns"][i] if col["has_dur_ns"][i] else None,
                )
            )
        return out


def concatenated(tables: Sequence[OpTable]) -> OpTable:
    """Tables that share their value tables (taken from one), end to end."""
    if not tables:
        raise ValueError("no table to concatenate")
    first = tables[0]
    return OpTable({k: np.concatenate([t.columns[k] for t in tables]) for k in first.columns}, first.tables)


class OpRows(Sequence[DeviceOp]):
    """Some rows of a table, in order, held as their indices (8 bytes a row) until read: a step's ops."""

    def __init__(self, table: OpTable, rows: np.ndarray) -> None:
        self.base, self.rows = table, rows

    def table(self) -> OpTable:
        return self.base.take(self.rows)

    def column(self, name: str) -> np.ndarray:
        return self.base.columns[name][self.rows]

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i):
        return self.table()[i]

    def __iter__(self) -> Iterator[DeviceOp]:
        return iter(self.table())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (OpTable, OpRows, list, tuple)):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"OpRows({len(self)} of {len(self.base)} ops)"


def column(ops: Sequence[DeviceOp], name: str) -> np.ndarray:
    """One column of a table, of some of its rows, or of a list of ops."""
    if isinstance(ops, OpRows):
        return ops.column(name)
    return OpTable.of(ops).columns[name]
