"""A trace's events checked before any figure is read from them (pure: no torch).

A damaged or malformed trace is refused in one line naming the file and the event's index in ``traceEvents``
(``TraceFileError``), never a ``TypeError`` / ``KeyError`` from deep inside a reader. Only the events aorta
reads are held to the rules below; any other event (Python functions, CPU ops, metadata) passes as written:

- every event is a JSON object (a ``null`` or a number in the list is refused);
- a complete event (``ph`` ``"X"``) of a category aorta reads (device work, launches, labelled ranges, the
  profiler's steps) has a ``name`` string, a finite numeric ``ts`` and, where present, a finite numeric ``dur``
  >= 0, ``args`` that are an object and an integer ``args.correlation``;
- a flow event (``ph`` ``"s"`` / ``"f"``) of the launch-to-kernel category (``ac2g``) has an ``id`` and a
  numeric ``ts``.

Duplicated events (a profiler or a merge tool that wrote some records twice: every field the same) are
dropped and counted: kept, they double every kernel count and make the cross-rank collective match refuse
on "different numbers of collectives".
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

from aorta.timeline.device_identity import kineto_identity

FLOW_CATEGORY = "ac2g"  # Kineto's launch -> device work flow events ("s" at the launch, "f" at the work)
_READ_CATEGORIES = (
    "kernel",
    "gpu_memcpy",
    "gpu_memset",
    "cuda_runtime",
    "cuda_driver",
    "user_annotation",
    "gpu_user_annotation",
)


class TraceEventError(ValueError):
    """One event that breaks the rules above; the loader adds the file's name to the message."""


def _number(value: object) -> bool:
    """A finite JSON number: Python's json reads ``NaN`` and ``Infinity``, which JSON does not allow and which no
    profiler writes for a time."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check(index: int, ev: object) -> None:
    if not isinstance(ev, dict):
        raise TraceEventError(f"event {index} is {json.dumps(ev)[:40]}, not a JSON object")
    ph, cat = ev.get("ph"), str(ev.get("cat", "")).lower()
    if ph == "X" and (cat in _READ_CATEGORIES or str(ev.get("name", "")).startswith("ProfilerStep#")):
        if not isinstance(ev.get("name"), str):
            raise TraceEventError(f"event {index} ({cat}) has no name")
        if not _number(ev.get("ts")):
            raise TraceEventError(
                f"event {index} ({cat} {ev['name'][:60]!r}) has ts {ev.get('ts')!r}, not a number"
            )
        if "dur" in ev and not (_number(ev["dur"]) and ev["dur"] >= 0):
            raise TraceEventError(
                f"event {index} ({cat} {ev['name'][:60]!r}) has dur {ev['dur']!r}: a duration is a number >= 0"
            )
        args = ev.get("args")
        if args is not None and not isinstance(args, dict):
            raise TraceEventError(
                f"event {index} ({cat} {ev['name'][:60]!r}) has args {args!r:.40}, not an object"
            )
        corr = (args or {}).get("correlation", 0)
        if not isinstance(corr, int) or isinstance(corr, bool):  # the profiler's ids are integers
            raise TraceEventError(
                f"event {index} ({cat} {ev['name'][:60]!r}) has args.correlation {corr!r:.40}, not an integer"
            )
    elif ph in ("s", "f") and cat == FLOW_CATEGORY:
        if "id" not in ev or not _number(ev.get("ts")):
            raise TraceEventError(f"event {index} (flow {ph!r}) has no id or no numeric ts")


def _key(ev: dict) -> tuple:
    """Every field of an event aorta reads (a writer that repeats a record repeats its args in one order)."""
    rest = tuple((k, repr(v)) for k, v in ev.items() if k not in _FIXED)
    return (*(ev.get(k) for k in _FIXED), rest)


# every arg of an event that some figure of ``aorta trace figures`` reads (aorta/fsdp/trace_analysis.py,
# aorta/timeline/launch_links.py, the identity below)
READ_ARGS = frozenset(
    (
        "correlation",
        "device",
        "stream",
        "grid",
        "block",
        "Collective name",
        "dtype",
        "In msg nelems",
        "Out msg nelems",
        "Group size",
        "Process Group Name",
    )
)


_FIXED = ("ph", "cat", "name", "pid", "tid", "ts", "dur", "id", "bp")


DEVICE_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
# PyTorch 1.8's Kineto wrote capitalised categories of its own: ``Runtime`` (the CUDA / HIP runtime calls),
# ``Memcpy``, ``Memset`` (and ``Kernel``); each is the later category of the same events
LEGACY_CATEGORIES = {"runtime": "cuda_runtime", "memcpy": "gpu_memcpy", "memset": "gpu_memset"}


def is_read(ev: dict) -> bool:
    """An event some figure is read from: device work, launches, labelled ranges, flows and the profiler's
    steps (whatever their category: older Kineto writes them as ``cpu_op``). The rest (Python functions, CPU
    ops, metadata) is checked where it matters and need not be kept."""
    cat = str(ev.get("cat", "")).lower()
    return (
        (ev.get("ph") == "X" and cat in _READ_CATEGORIES)
        or cat == FLOW_CATEGORY
        or str(ev.get("name", "")).startswith("ProfilerStep#")
    )


class EventChecker:
    """The module's rules, one event at a time (a trace read as a stream never holds all its events):
    ``take(index, event)`` refuses a malformed event and says whether to keep it (False: an exact duplicate);
    ``dropped`` counts the duplicates (``events``: all; ``device_ops``: kernels, copies and memsets)."""

    def __init__(self, keep_args: frozenset[str] | None = None) -> None:
        # the args a figure reads (READ_ARGS): the rest of a kept event's args is dropped once checked, so a
        # large trace holds per event only what some figure needs; None keeps every arg (a merge writes them)
        self._keep_args = keep_args
        # the key's hash -> the events seen with it (compared in full on a match): the events are kept anyway,
        # so a large trace does not hold every key beside them
        self._seen: dict[int, list[dict]] = {}
        self._device_seen: set[int] = (
            set()
        )  # device work: the hash of its identity (aorta/timeline/device_identity.py) only
        self.dropped = {"events": 0, "device_ops": 0}

    def identity(self, index: int, ev: object) -> tuple[str, int] | None:
        """Check ``ev`` (refusing a malformed one), keep only the args a figure reads and name a legacy category
        as later readers do; then what it is deduplicated by: ``("device", hash)`` for device work (its
        identity), ``("event", hash)`` for the other events aorta reads (every field), None for the rest. A
        reader that holds no events (aorta/fsdp/trace_stream.py) keeps the hashes and drops repeats by them."""
        _check(index, ev)
        assert isinstance(ev, dict)  # _check refused anything else
        if self._keep_args is not None and isinstance(ev.get("args"), dict):
            ev["args"] = {k: v for k, v in ev["args"].items() if k in self._keep_args}
        cat = str(ev.get("cat", "")).lower()
        if cat in LEGACY_CATEGORIES:  # PyTorch 1.8: read as every later reader of the event reads it
            cat = ev["cat"] = LEGACY_CATEGORIES[cat]
        # only the events aorta reads: metadata repeats by design (one per track), CPU ops are not read
        if ev.get("ph") == "X" and cat in DEVICE_CATEGORIES:
            return "device", hash(kineto_identity(ev, cat))
        if (ev.get("ph") == "X" and cat in _READ_CATEGORIES) or cat == FLOW_CATEGORY:
            return "event", hash(_key(ev))
        return None

    def take(self, index: int, ev: object) -> bool:
        what = self.identity(index, ev)
        assert isinstance(ev, dict)  # identity refused anything else
        if what is None:
            return True
        kind, identity = what
        if kind == "device":
            if identity in self._device_seen:
                self.dropped["events"] += 1
                self.dropped["device_ops"] += 1
                return False
            self._device_seen.add(identity)
            return True
        key = _key(ev)
        same = self._seen.setdefault(identity, [])
        if any(_key(other) == key for other in same):
            self.dropped["events"] += 1
            return False
        same.append(ev)
        return True


def checked_events(events: Sequence[object]) -> tuple[list[dict], dict[str, int]]:
    """The events with exact duplicates dropped, and how many were dropped (``events``: all; ``device_ops``:
    kernels, copies and memsets, the ones that change figures); ``TraceEventError`` naming the first event
    that breaks the module's rules."""
    checker = EventChecker()
    out = [ev for i, ev in enumerate(events) if checker.take(i, ev)]
    return out, checker.dropped  # type: ignore[return-value]
