"""Device ops whose times no profiler run can have, left out with a note naming them (pure: no torch).

A profiled window lasts seconds to minutes. An op that starts more than a day from the trace's median start (a
kernel at ``ts`` 0 in a trace on the epoch clock: a step idle of 7.5e9 ms) or ends more than a day after it (a
duration of 1.8e13 µs) is a damaged record, not work: every figure of its window would be the damage's. The
median start is the reference because half the ops at least lie beside it, whatever the damaged ones say.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from aorta.timeline.device_op import DeviceOp
from aorta.timeline.op_table import OpTable

DAY_US = 86_400e6
NAMED = 3  # ops named in the note; the rest counted


def implausible(ops: Sequence[DeviceOp], limit_us: float = DAY_US) -> tuple[Sequence[DeviceOp], str | None]:
    """The ops to keep (a table: aorta/timeline/op_table.py; the ops given where all are kept), and the note
    naming those left out (None where none is)."""
    if not ops:
        return ops, None
    table = OpTable.of(ops)
    start = table.columns["start_us"]
    median = float(np.sort(start)[len(start) // 2])
    out = (np.abs(start - median) > limit_us) | (table.end_us - median > limit_us)
    if not out.any():
        return ops, None
    gone = np.flatnonzero(out)
    named = "; ".join(
        f"{op.category} {op.name!r} on device {op.device if op.device is not None else '?'} stream {op.stream} "
        f"at {op.start_us:.3f} µs for {op.dur_us:.3f} µs"
        for op in table.take(gone[:NAMED])
    )
    more = f" and {len(gone) - NAMED} more" if len(gone) > NAMED else ""
    return table.take(~out), (
        f"{len(gone)} of {len(ops)} device ops left out as implausible, their start or end more than a day from "
        f"the trace's median start ({median:.3f} µs): {named}{more}"
    )
