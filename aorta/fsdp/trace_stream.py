"""A Kineto trace read as a stream into columns: no event is held once it is read (pure: no torch; numpy).

``aorta trace figures`` needs of a trace its device work, the launch of each op (its host time: which step it is
in) and the profiler's steps. Every event is checked as it is read (aorta/timeline/trace_check.py) and what a
figure reads of it is appended to columns of numbers (aorta/timeline/op_table.py for the device work; launch
calls, flow events and the hashes that find repeated events beside it): about 120 bytes per device op, 45 per
launch call or flow event, nothing for the rest (Python functions, CPU ops), where a dict per kept event cost
about 1 KB. Kineto writes the device work, the launches and the flows in no order that links them as they come
(host events first, device work as the profiler drained it), so the links are made once the stream has ended, on
the columns, with the rules of aorta/timeline/launch_links.py and aorta/timeline/trace_check.py:

- a repeated event (every field the same; device work: the same identity) is the first one read, the rest
  dropped and counted, told apart by one 64-bit hash each (device work always was; for the other events a hash
  stands for the fields compared before);
- a flow position (``pid``, ``tid``, ``ts``) holds the first flow id written there; a correlation id's launch is
  its earliest call (the first of equal times); a flow id's launch is the first call at a position of it;
- an op goes by its correlation id where a call has it, else by its flow, else has no launch; a one-kernel
  launch call whose id (correlation, else flow) no op carries is missing GPU work.

Begin/end pairs are read as the complete events they stand for (aorta/timeline/begin_end.py), in the place of
their begin. A trace ``aorta trace merge`` wrote is split into its ranks by ``pid`` at the end (the list of ranks
may come after the events).
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aorta.fsdp.trace_analysis import _message_bytes
from aorta.timeline.begin_end import BeginEnd
from aorta.timeline.device_identity import kineto_device, kineto_stream, merged_ranks
from aorta.timeline.kernel_timeline import launch_dims
from aorta.timeline.launch_links import ONE_KERNEL_LAUNCH
from aorta.timeline.op_table import COLUMNS, LINKS, OpTable, OpTableBuilder
from aorta.timeline.profiler_steps import STEP_NAME
from aorta.timeline.trace_check import (
    DEVICE_CATEGORIES,
    FLOW_CATEGORY,
    READ_ARGS,
    EventChecker,
    TraceEventError,
    is_read,
)
from aorta.timeline.trace_json import ns_of

LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver")
# a flow id that is no number (a string) is named by OTHER_IDS + its index among them; a None id by NO_ID
OTHER_IDS, NO_ID = 2**62, -(2**62)


class _Plain:
    """Values by index, equal as dict keys are (``1`` and ``1.0`` are one ``pid``, as in the link rules' dicts)."""

    def __init__(self) -> None:
        self.values: list[Any] = []
        self._index: dict[Any, int] = {}

    def index(self, value: Any) -> int:
        try:
            key = value
            i = self._index.get(key)
        except TypeError:  # unhashable (a list where a profiler writes a number): by its text
            key = ("unhashable", repr(value))
            i = self._index.get(key)
        if i is None:
            i = self._index[key] = len(self.values)
            self.values.append(value)
        return i

    def find(self, value: Any) -> int | None:
        try:
            return self._index.get(value)
        except TypeError:
            return self._index.get(("unhashable", repr(value)))


def _columns(**typecodes: str) -> dict[str, array]:
    return {name: array(code) for name, code in typecodes.items()}


def _key(value: Any, others: _Plain) -> int:
    """An id (correlation or flow) as one int64: itself where it is a number, else named by its index."""
    if value is None:
        return NO_ID
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        n = int(value)
        if not -OTHER_IDS < n < OTHER_IDS:
            raise TraceEventError(f"an id {n} past ±2^62 (a correlation or flow id is a small integer)")
        return n
    return OTHER_IDS + others.index(value)


@dataclass
class Read:
    """One process's (or merged rank's) reading: what ``DeviceTrace`` is built from."""

    ops: OpTable
    steps: list[dict] = field(default_factory=list)  # the ProfilerStep#N-named events, in trace order
    missing_launches_us: list[float] = field(default_factory=list)
    launch_calls: int = 0
    host_pid: int | None = None


class KinetoStream:
    """``take(index, event)`` for every event of the trace in order (the callback of
    aorta/timeline/trace_json.py); ``finish(doc)`` once the stream has ended."""

    def __init__(self) -> None:
        self.checker = EventChecker(READ_ARGS)
        self.pairs = BeginEnd(self._finish_event)
        self.pids, self.tids, self.others = _Plain(), _Plain(), _Plain()
        self.ops = OpTableBuilder()
        # order: the event's index in the trace (below 2^31: a trace of that many events is 500 GB)
        self.dev = _columns(pid="i", tid="i", ts="d", order="i", hash="q", corr="q")
        self.calls = _columns(pid="i", tid="i", ts="d", order="i", hash="q", corr="q", one="b")
        self.flows = _columns(pid="i", tid="i", ts="d", order="i", hash="q", id="q")
        self.other_hashes = array("q")
        # (order, event, its pid's index, what it is deduplicated with, its row there)
        self.steps: list[tuple[int, dict, int, str, int]] = []
        self._one_kernel: dict[str, bool] = {}

    def take(self, index: int, ev: object) -> bool:
        if isinstance(ev, dict) and ev.get("ph") in ("B", "E"):
            self.pairs.take(index, ev)
        else:
            self._finish_event(index, ev)
        return False  # nothing is held by the JSON reader

    def _position(self, cols: dict[str, array], ev: Mapping, index: int, identity: int) -> None:
        cols["pid"].append(self.pids.index(ev.get("pid")))
        cols["tid"].append(self.tids.index(ev.get("tid")))
        cols["ts"].append(float(ev["ts"]))
        cols["order"].append(index)
        cols["hash"].append(identity)

    def _finish_event(self, index: int, ev: object) -> bool:
        what = self.checker.identity(index, ev)
        assert isinstance(ev, dict)  # identity refused anything else
        if not is_read(ev):
            return False
        cat, ph = str(ev.get("cat", "")).lower(), ev.get("ph")
        args = ev.get("args") or {}
        corr = args.get("correlation") if isinstance(args, Mapping) else None
        corr = (
            corr if isinstance(corr, int) and not isinstance(corr, bool) else None
        )  # trace_check: int or none
        if ph == "X" and cat in DEVICE_CATEGORIES:
            kind, row = "device", len(self.ops)
            self._position(self.dev, ev, index, what[1])  # type: ignore[index]
            self.dev["corr"].append(_key(corr, self.others))
            self._add_op(ev, cat, args)
        elif ph == "X" and cat in LAUNCH_CATEGORIES:
            kind, row = "call", len(self.calls["order"])
            self._position(self.calls, ev, index, what[1])  # type: ignore[index]
            self.calls["corr"].append(_key(corr, self.others))
            name = str(ev.get("name", ""))
            one = self._one_kernel.get(name)
            if one is None:
                one = self._one_kernel[name] = bool(ONE_KERNEL_LAUNCH.search(name))
            self.calls["one"].append(one)
        elif cat == FLOW_CATEGORY and ph in ("s", "f"):
            kind, row = "flow", len(self.flows["order"])
            self._position(self.flows, ev, index, what[1])  # type: ignore[index]
            self.flows["id"].append(_key(ev.get("id"), self.others))
        elif what is not None:
            kind, row = "other", len(self.other_hashes)
            self.other_hashes.append(what[1])
        else:
            kind, row = "kept", 0
        if STEP_NAME.match(str(ev.get("name", ""))):
            self.steps.append((index, ev, self.pids.index(ev.get("pid")), kind, row))
        return True

    def _add_op(self, ev: Mapping, cat: str, args: Mapping) -> None:
        coll, group, pg = args.get("Collective name"), args.get("Group size"), args.get("Process Group Name")
        start_ns = ns_of(ev["ts"])
        dur = ev.get("dur", 0.0)
        try:
            self._add(ev, cat, args, coll, group, pg, start_ns, dur)
        except ValueError as exc:  # a number past 64 bits
            raise TraceEventError(f"{cat} {str(ev['name'])[:60]!r}: {exc}") from None

    def _add(self, ev, cat, args, coll, group, pg, start_ns, dur) -> None:
        self.ops.add(
            ev["name"],
            kineto_stream(ev),
            float(ev["ts"]),
            float(dur),
            cat,
            launch_dims(args.get("grid")),
            launch_dims(args.get("block")),
            str(coll) if coll else None,
            _message_bytes(args),
            int(group) if isinstance(group, (int, float)) and group > 0 else None,
            str(pg) if pg not in (None, "") else None,
            device=kineto_device(ev),
            start_ns=start_ns,
            dur_ns=ns_of(dur) if start_ns is not None else None,
        )

    # ------------------------------------------------------------------------------------------ the end
    def finish(self, doc: Mapping) -> tuple[list[tuple[Read, dict | None]], dict[str, int]]:
        """Per process (one, or each rank of a merged trace: with its ``otherData.aorta_merge`` entry), its
        reading; and the repeated events dropped (``events``: all, ``device_ops``: device work). Once only: the
        columns read are let go as the ops are taken from them."""
        self.pairs.never_ended(lambda ev: ev.get("ph") == "X" and is_read(ev))
        dev = _arrays(self.dev)
        calls, flows = _arrays(self.calls), _arrays(self.flows)
        keep = {
            "device": _first(dev.pop("hash")),
            "call": _first(calls.pop("hash")),
            "flow": _first(flows.pop("hash")),
            "other": _first(_arrays({"h": self.other_hashes})["h"]),
        }
        self.dev = self.calls = self.flows = {}  # held by the arrays above until they are let go
        dropped_ops = int((~keep["device"]).sum())
        dropped = {"events": sum(int((~k).sum()) for k in keep.values()), "device_ops": dropped_ops}
        ranks = merged_ranks(doc)
        if not ranks:
            mine = {"device": keep["device"], "call": keep["call"], "flow": keep["flow"]}
            return [(self._read(self.ops, dev, calls, flows, mine, keep, None, False), None)], dropped
        table = self.ops.table()
        out: list[tuple[Read, dict | None]] = []
        for pid_value, info in sorted(ranks.items(), key=lambda kv: kv[1]["rank"]):
            pid = self.pids.find(pid_value)  # None: a rank whose pid holds no event
            mine = {
                "device": keep["device"] & (dev["pid"] == pid) if pid is not None else keep["device"] & False,
                "call": keep["call"] & (calls["pid"] == pid) if pid is not None else keep["call"] & False,
                "flow": keep["flow"] & (flows["pid"] == pid) if pid is not None else keep["flow"] & False,
            }
            out.append((self._read(table, dev, calls, flows, mine, keep, pid, True), info))
        return out, dropped

    def _read(self, ops, dev, calls, flows, mine, keep, pid, merged) -> Read:
        """One process's reading from the columns; ``ops``: the builder (taken from once) or its table."""
        d, c, f = (_rows(dev, mine["device"]), _rows(calls, mine["call"]), _rows(flows, mine["flow"]))
        d_rows = np.flatnonzero(mine["device"])[np.argsort(d["order"], kind="stable")]
        d, c, f = _by_order(d), _by_order(c), _by_order(f)
        # a flow position's first flow id; the flow at each call's and each op's position (NO_ID: none)
        width = len(self.tids.values) + 1
        at_pos, first = np.unique(_position(f, width), return_index=True)
        at_id = f["id"][first]
        del f, first
        call_flow = _lookup(at_pos, at_id, _position(c, width))
        dev_flow = _lookup(at_pos, at_id, _position(d, width))
        del at_pos, at_id
        # a correlation id's earliest call (the first of equal times)
        has = c["corr"] != NO_ID
        order = np.lexsort((np.arange(has.sum()), c["ts"][has], c["corr"][has]))
        corr_sorted = c["corr"][has][order]
        firsts = np.ones(len(order), dtype=bool)
        firsts[1:] = corr_sorted[1:] != corr_sorted[:-1]
        by_corr, corr_ts = corr_sorted[firsts], c["ts"][has][order][firsts]
        del order, corr_sorted, firsts
        # a flow id's first call at a position of it
        flowing = np.flatnonzero(call_flow != NO_ID)
        by_flow, first = np.unique(call_flow[flowing], return_index=True)
        flow_ts = c["ts"][flowing][first]
        del flowing, first
        launch_c = _lookup(by_corr, corr_ts, d["corr"], np.nan)
        launch_f = _lookup(by_flow, flow_ts, dev_flow, np.nan)
        linked_c = ~np.isnan(launch_c) & (d["corr"] != NO_ID)
        linked_f = ~linked_c & (dev_flow != NO_ID) & ~np.isnan(launch_f)
        launch = np.where(linked_c, launch_c, np.where(linked_f, launch_f, np.nan))
        link = np.where(linked_c, LINKS.index("correlation"), np.where(linked_f, LINKS.index("flow"), 0))
        dev_key = np.where(linked_c | (d["corr"] != NO_ID) & ~linked_f, d["corr"], dev_flow)
        del launch_c, launch_f, linked_c, linked_f, dev_flow, d
        call_key = np.where(c["corr"] != NO_ID, c["corr"], call_flow)
        one = c["one"].astype(bool)
        missing = one & (call_key != NO_ID) & ~np.isin(call_key, dev_key)
        del call_key, call_flow
        steps = [
            ev
            for _, ev, ev_pid, kind, row in sorted(self.steps, key=lambda s: s[0])
            if (kind not in keep or keep[kind][row]) and (not merged or ev_pid == pid)
        ]
        pids = Counter(c["pid"].tolist())
        host = None
        if pids:  # the pid most launches carry; the first of equal counts
            top = max(pids.values())
            host = self.pids.values[next(p for p in c["pid"].tolist() if pids[p] == top)]
        missing_us, launch_calls = c["ts"][missing].tolist(), int(one.sum())
        del c, one, missing
        if not merged:  # one process: the columns read are let go before the ops are taken
            for cols in (dev, calls, flows):
                cols.clear()
        # the ops sorted by (start, end), stable: taken once, each column let go as it is taken
        columns = ops.columns if isinstance(ops, OpTable) else ops.column_arrays()
        start = columns["start_us"][d_rows]
        perm = np.lexsort((start + columns["dur_us"][d_rows], start))
        del start, columns
        table = (ops.take if isinstance(ops, OpTable) else ops.taken)(d_rows[perm]).with_columns(
            launch_us=launch[perm].astype(np.float64),
            link=link[perm].astype(np.int8),
            correlation=np.where(dev_key < OTHER_IDS, dev_key, 0)[perm].astype(np.int64),
            has_correlation=((dev_key != NO_ID) & (dev_key < OTHER_IDS))[perm],
        )
        return Read(
            table,
            steps,
            missing_us,
            launch_calls,
            host if isinstance(host, int) and not isinstance(host, bool) else None,
        )


def _arrays(cols: dict[str, array]) -> dict[str, np.ndarray]:
    dtypes = {"i": np.int32, "d": np.float64, "q": np.int64, "b": np.int8}
    return {k: np.frombuffer(v, dtypes[v.typecode]) if len(v) else np.empty(0, dtypes[v.typecode])
            for k, v in cols.items()}  # fmt: skip


def _first(hashes: np.ndarray) -> np.ndarray:
    """True for each hash's first occurrence (a repeat's is False)."""
    keep = np.zeros(len(hashes), dtype=bool)
    if len(hashes):
        keep[np.unique(hashes, return_index=True)[1]] = True
    return keep


def _rows(cols: dict[str, np.ndarray], mask) -> dict[str, np.ndarray]:
    if mask.dtype == bool and mask.all():  # every row: no copy
        return dict(cols)
    return {k: v[mask] for k, v in cols.items()}


def _by_order(cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Rows in trace order (a begin/end pair's event is read at its end, and stands at its begin)."""
    order = cols["order"]
    if len(order) < 2 or bool((order[1:] >= order[:-1]).all()):
        return cols
    return _rows(cols, np.argsort(order, kind="stable"))


def _position(cols: dict[str, np.ndarray], width: int) -> np.ndarray:
    """Each row's (pid, tid, ts) as one complex number: (pid, tid) as its real part, ts its imaginary part;
    numpy sorts and searches complex numbers by the real part, then the imaginary, so equal positions are
    equal numbers and the lookups are searches in sorted arrays."""
    out = np.empty(len(cols["pid"]), dtype=np.complex128)
    out.real = cols["pid"].astype(np.float64) * width + cols["tid"]
    out.imag = cols["ts"] + 0.0  # + 0.0: -0.0 is 0.0, one position
    return out


def _lookup(keys: np.ndarray, values: np.ndarray, wanted: np.ndarray, default: Any = NO_ID) -> np.ndarray:
    """``values`` at each of ``wanted`` in the sorted, distinct ``keys``; ``default`` where absent."""
    if len(keys) == 0:
        return np.full(len(wanted), default, dtype=values.dtype if default is NO_ID else np.float64)
    at = np.clip(np.searchsorted(keys, wanted), 0, len(keys) - 1)
    found = keys[at] == wanted
    return np.where(found, values[at], default)


assert set(COLUMNS) >= {"launch_us", "link", "correlation", "has_correlation"}  # what _read sets
