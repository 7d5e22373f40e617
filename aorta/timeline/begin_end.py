"""Chrome trace duration events written as a begin/end pair, read as the one complete event they are (pure).

The Trace Event Format has two ways to write a span: one complete event (``ph`` ``"X"``, ``ts`` and ``dur``, as
Kineto writes) or a ``"B"`` at its start and an ``"E"`` at its end on the same thread (``pid``, ``tid``), an
``"E"`` closing the latest ``"B"`` still open there (what other tracers and hand-written traces use). Before,
only ``"X"`` was read: a ``ProfilerStep#N`` or a kernel written as a pair was no step and no kernel, silently.

Here each pair becomes the ``"X"`` it stands for, in the place of its ``"B"``: ``dur`` is ``E.ts - B.ts``, taken in
the text's integer ns (aorta/timeline/trace_json.py); the ``E``'s args are added to the ``B``'s (as trace
viewers merge them). The event is then checked and deduplicated as every ``"X"`` is. An ``"E"`` with no open
``"B"`` on its thread is no span (viewers drop it too); an ``"E"`` before its ``"B"``, or a ``"B"`` of an event some
figure reads that never ends, is refused naming the event's index.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aorta.timeline.trace_check import TraceEventError
from aorta.timeline.trace_json import ns_of

DROPPED = (
    "aorta.dropped"  # the ``ph`` of a pair's "B" whose "X" was not kept (a duplicate, or read by no figure)
)


class BeginEnd:
    """The open ``"B"`` events of every thread; ``take`` is given each ``"B"`` / ``"E"`` in order."""

    def __init__(self, finish: Callable[[int, dict], bool]) -> None:
        # finish(index, complete event) -> keep it: the checks every "X" goes through
        self._finish = finish
        self._open: dict[tuple, list[tuple[int, dict]]] = {}
        self.used = False  # any "B" seen: the event list holds pairs to tidy (``kept``)

    def take(self, index: int, ev: dict) -> bool:
        """Whether to keep ``ev`` in the event list: a "B" is held (it becomes its "X" when its "E" comes),
        an "E" never."""
        thread = (ev.get("pid"), ev.get("tid"))
        if ev.get("ph") == "B":
            self.used = True
            self._open.setdefault(thread, []).append((index, ev))
            return True
        stack = self._open.get(thread)
        if not stack:
            return False
        begin_index, begin = stack.pop()
        start: Any = begin.get("ts")
        end: Any = ev.get("ts")
        if not _number(start) or not _number(end):
            raise TraceEventError(
                f"event {begin_index} ('B' {str(begin.get('name'))[:60]!r}) or its 'E' (event {index}) has a ts "
                "that is no number"
            )
        start_ns, end_ns = ns_of(start), ns_of(end)
        dur = (end_ns - start_ns) / 1e3 if start_ns is not None and end_ns is not None else end - start
        if dur < 0:
            raise TraceEventError(
                f"event {begin_index} ('B' {str(begin.get('name'))[:60]!r}) ends before it begins (its 'E', event "
                f"{index}, at ts {end!r})"
            )
        begin["ph"], begin["dur"] = "X", dur
        if isinstance(ev.get("args"), dict) and ev["args"]:
            args = begin.get("args")
            begin["args"] = {**(args if isinstance(args, dict) else {}), **ev["args"]}
        if not self._finish(begin_index, begin):
            begin["ph"] = DROPPED
        return False

    def never_ended(self, read: Callable[[dict], bool]) -> None:
        """``TraceEventError`` for the first ``"B"`` some figure would read that no ``"E"`` closed."""
        for stack in self._open.values():
            for index, ev in stack:
                if read(dict(ev, ph="X")):
                    raise TraceEventError(
                        f"event {index} ('B' {str(ev.get('name'))[:60]!r} on pid {ev.get('pid')} tid "
                        f"{ev.get('tid')}) never ends: no 'E' closes it (a trace cut short?)"
                    )


def kept(events: list[Any]) -> list[Any]:
    """The event list without the pairs' leftovers: "B" events never closed, and those not kept."""
    return [ev for ev in events if not (isinstance(ev, dict) and ev.get("ph") in ("B", DROPPED))]


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
