"""Which device timeline an op is on, and whose launch it is: one rule for every format (pure: no torch).

A device timeline is (process or rank, device), read from every field that says so:

- the **device**: Kineto's ``args.device``, else its ``pid`` (Kineto puts each GPU's tracks in a process of
  that GPU's index: ``pid`` 2 is "GPU 2"); rocprofv3 CSV's ``Agent_Id`` (``Agent 4`` or a bare index; a copy's
  GPU end) and rocpd's ``agent_id``. Values are normalised (``device_value``): ``0``, ``0.0``, ``"0"`` and
  ``"Agent 0"`` are one device; ``true`` or an empty string name none.
- the **process or rank**: one rocprofv3 output per process (its pid); one Kineto trace per process, except
  a trace that ``aorta trace merge`` wrote, where each rank is a process of its own (``pid`` = rank, listed in
  ``otherData.aorta_merge.ranks``: ``merged_ranks``). Its events are read per rank, so a launch
  (``cudaLaunchKernel`` -> kernel, by correlation id or flow) is looked up only in the process that made it:
  two ranks' correlation ids repeat, and a kernel is never linked to another rank's call.

A duplicated device op is the same op by this identity too (``kineto_identity``): two ranks' identical kernels
on the same device index are two kernels, not one written twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MERGE_KEY = "aorta_merge"  # otherData.aorta_merge: what aorta trace merge writes of its ranks


def device_value(value: object) -> int | str | None:
    """A device as the profiler names it, normalised: an integer index where the value is one (``0``,
    ``0.0``, ``"0"``, ``" 0 "``, ``"Agent 0"``, ``"GPU 0"``, ``"cuda:0"``), else the stripped text; None
    for none (absent, ``null``, a bool, an empty string)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else str(value)
    text = str(value).strip()
    if not text:
        return None
    tail = text.replace(":", " ").split()[-1]
    if tail.isdigit() and (tail == text or text[: -len(tail)].strip(" :").lower() in _DEVICE_WORDS):
        return int(tail)
    return text


_DEVICE_WORDS = ("agent", "gpu", "cuda", "hip", "device")


def kineto_device(event: Mapping) -> int | str | None:
    """A Kineto device event's device: ``args.device``, else its ``pid`` (the GPU's track)."""
    args = event.get("args") or {}
    device = device_value(args.get("device")) if isinstance(args, Mapping) else None
    return device if device is not None else device_value(event.get("pid"))


def kineto_stream(event: Mapping) -> Any:  # the stream id as written: an int, or a string
    """A Kineto device event's stream: ``args.stream``, else its ``tid`` (the stream's track)."""
    args = event.get("args") or {}
    stream = args.get("stream") if isinstance(args, Mapping) else None
    return stream if stream is not None else event.get("tid", 0)


def kineto_identity(event: Mapping, category: str) -> tuple:
    """What makes a Kineto device op itself: its kind, name, process (``pid``), device, stream, start,
    duration and correlation id, in whatever order the writer put its keys and whatever other args it kept."""
    args = event.get("args") or {}
    return (
        category,
        event.get("name"),
        event.get("pid"),
        kineto_device(event),
        kineto_stream(event),
        event.get("ts"),
        event.get("dur"),
        args.get("correlation") if isinstance(args, Mapping) else None,
    )


def merged_ranks(doc: Mapping) -> dict[object, dict]:
    """A merged trace's ranks by the ``pid`` that holds each (``otherData.aorta_merge.ranks``: rank ->
    ``{"pid": ..., "distributedInfo": ...}``); {} for any other trace (one process: the file's)."""
    other = doc.get("otherData")
    merge = other.get(MERGE_KEY) if isinstance(other, Mapping) else None
    ranks = merge.get("ranks") if isinstance(merge, Mapping) else None
    if not isinstance(ranks, Mapping):
        return {}
    out: dict[object, dict] = {}
    for rank, info in ranks.items():
        if not isinstance(info, Mapping) or not str(rank).isdigit():
            continue
        out[info.get("pid", int(rank))] = {"rank": int(rank), **info}
    return out
