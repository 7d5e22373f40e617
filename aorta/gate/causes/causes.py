"""Why a verdict moved: named causes, each with the evidence it rests on (pure: no torch).

Read from each side's run evidence (aorta/gate/causes/run_evidence.py), the kernel diff (aorta/gate/causes/kernel_diff.py)
and the two runs' fingerprints (aorta/environment/fingerprint.py). A cause is asserted only with its evidence; where no
rule holds the answer is ``unexplained``, with what was checked and what was missing.

=====================  ======================================================================================
``throttle``           throttled rounds (clock or power-cap flags, aorta/telemetry): their share of the
                       slower side's rounds is ``THROTTLE_RISE`` or more above the other side's
``kernel_selection``   for one op (a kernel family, aorta/timeline/kernel_names.py) kernels lost launches (or
                       disappeared) and others gained them (or appeared) in their place
``launch_path``        the host's enqueue time per iteration grew by ``HOST_GROWTH`` or more while the
                       kernels' device time per iteration moved less than ``DEVICE_STILL``
``queue_concurrency``  the same kernels (none appeared or disappeared, device time within ``DEVICE_STILL``)
                       ran at an effective concurrency ``CONCURRENCY_DROP`` lower
``collective_config``  NCCL/RCCL kernel names (algorithm, protocol) or grids (channels) changed for a
                       collective
``peer_wait``          exposed communication grew by ``COMM_GROWTH`` or more, and more of the growth is
                       waiting for peers than transfer
``environment``        a named difference in the two runs' fingerprints: a setting (scheduling variable),
                       the hardware (clocks, power limit, GPU count) or a sweep cell's settings
=====================  ======================================================================================

Direction: for a FASTER verdict the rules read the other way (throttling on the baseline's side, enqueue
time that shrank, concurrency that rose, wait that shrank).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from aorta import stats
from aorta.environment.fingerprint import NOT_SETTINGS, differences, fingerprint
from aorta.timeline.kernel_names import is_collective

THROTTLE, KERNEL_SELECTION, LAUNCH_PATH = "throttle", "kernel_selection", "launch_path"
QUEUE_CONCURRENCY, COLLECTIVE_CONFIG, PEER_WAIT = "queue_concurrency", "collective_config", "peer_wait"
ENVIRONMENT, UNEXPLAINED = "environment", "unexplained"
CAUSES = (
    THROTTLE,
    KERNEL_SELECTION,
    LAUNCH_PATH,
    QUEUE_CONCURRENCY,
    COLLECTIVE_CONFIG,
    PEER_WAIT,
    ENVIRONMENT,
    UNEXPLAINED,
)
HOST_GROWTH = 0.05
DEVICE_STILL = 0.02
CONCURRENCY_DROP = 0.05
COMM_GROWTH = 0.05
# A run's figure is a median over its rounds: throttling in a few more rounds barely moves it. On an H100 the
# calibrated slowdown's runs were power-capped in 50% of their rounds against the baseline's 33% (the same
# GEMM draws the cap on both sides): not the cause of its +5%
THROTTLE_RISE = 0.25
# The fingerprint groups a cause may name: versions are the stack under test (every header shows them), so
# a version change alone explains nothing in particular
ENVIRONMENT_GROUPS = ("settings", "hardware", "sweep")
SELECTION_SHARE = 0.01  # a swapped kernel must carry 1% of its side's kernel time to count
# NCCL names carry the algorithm and protocol: ncclDevKernel_AllReduce_Sum_bf16_RING_LL
_NCCL_ALGO = re.compile(
    r"_(RING|TREE|COLLNET_DIRECT|COLLNET_CHAIN|COLLNET|NVLS_TREE|NVLS|PAT)_(LL128|LL|SIMPLE)$"
)


def _cause(name: str, summary: str, evidence: dict[str, Any]) -> dict[str, Any]:
    return {"cause": name, "summary": summary, "evidence": evidence}


def _median(evidence: Sequence[Mapping], *path: str) -> float | None:
    values = []
    for e in evidence:
        v: Any = e
        for key in path:
            v = v.get(key) if isinstance(v, Mapping) else None
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            values.append(float(v))
    return stats.median(values) if values else None


def _rel(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or a <= 0 else b / a - 1.0


def _r(x: float | None) -> float | None:
    return None if x is None else float(f"{x:.4g}")


# ------------------------------------------------------------------------------------------------ rules
def throttle(ref: Sequence[Mapping], cand: Sequence[Mapping], slower: bool) -> dict | None:
    def share(side):
        tel = [e["telemetry"] for e in side if isinstance(e.get("telemetry"), Mapping)]
        rounds = sum(t.get("rounds") or 0 for t in tel)
        hit = sum(t.get("throttled_rounds") or 0 for t in tel)
        causes: Counter[str] = Counter()
        for t in tel:
            causes.update(t.get("throttle_causes") or {})
        return (hit / rounds if rounds else None), hit, rounds, causes

    (sa, ha, na, ca), (sb, hb, nb, cb) = share(ref), share(cand)
    if sa is None or sb is None:
        return None
    worse, better = (sb, sa) if slower else (sa, sb)
    if worse - better < THROTTLE_RISE:
        return None
    side, causes = ("candidate", cb) if slower else ("baseline", ca)
    return _cause(
        THROTTLE,
        f"the {side} was throttled in {hb if slower else ha} rounds ({', '.join(sorted(causes))}); "
        f"throttled share {sa:.0%} -> {sb:.0%}",
        {
            "throttled_rounds": [ha, hb],
            "rounds": [na, nb],
            "throttled_share": [_r(sa), _r(sb)],
            "throttle_causes": dict(causes),
            "sm_clock_mhz_median": [
                _r(_median(ref, "telemetry", "sm_clock_mhz_median")),
                _r(_median(cand, "telemetry", "sm_clock_mhz_median")),
            ],
        },
    )


def kernel_selection(diff: Mapping | None) -> list[dict]:
    """Per op (not a collective): kernels that lost launches (or disappeared) and others that gained them (or
    appeared), each side carrying ``SELECTION_SHARE`` of its kernel time or more. A kernel that only gained
    launches (a slowdown's extra spin kernels) swaps nothing."""
    if not diff:
        return []
    total_a, total_b = diff["device_ms"]
    lost: dict[str, list] = {}
    gained: dict[str, list] = {}
    for row in [*diff["disappeared"], *diff["appeared"], *diff["launch_changes"]]:
        if is_collective(row["family"] or ""):
            continue
        side = lost if row["launches"][1] < row["launches"][0] else gained
        side.setdefault(row["family"], []).append(row)
    out = []
    for fam in sorted(set(lost) & set(gained)):
        old_rows, new_rows = lost[fam], gained[fam]
        moved_a = sum(r["device_ms"][0] - r["device_ms"][1] for r in old_rows)  # time the old kernels gave up
        moved_b = sum(r["device_ms"][1] - r["device_ms"][0] for r in new_rows)  # and the new ones took
        if moved_a < SELECTION_SHARE * (total_a or 0) or moved_b < SELECTION_SHARE * (total_b or 0):
            continue
        out.append(
            _cause(
                KERNEL_SELECTION,
                f"{fam}: {', '.join(r['name'] for r in old_rows)} -> {', '.join(r['name'] for r in new_rows)}",
                {
                    "op": fam,
                    "baseline_kernels": [r["name"] for r in old_rows],
                    "candidate_kernels": [r["name"] for r in new_rows],
                    "device_ms": [
                        _r(sum(r["device_ms"][0] for r in old_rows)),
                        _r(sum(r["device_ms"][1] for r in new_rows)),
                    ],
                    "launches": [
                        _r(sum(r["launches"][0] for r in old_rows)),
                        _r(sum(r["launches"][1] for r in new_rows)),
                    ],
                    "kernels": [
                        {"name": r["name"], "launches": r["launches"], "device_ms": r["device_ms"]}
                        for r in [*old_rows, *new_rows]
                    ],
                },
            )
        )
    return out


def launch_path(ref: Sequence[Mapping], cand: Sequence[Mapping], diff: Mapping | None, slower: bool):
    ha, hb = _median(ref, "host_enqueue_ms_per_iteration"), _median(cand, "host_enqueue_ms_per_iteration")
    grew = _rel(ha, hb)
    if grew is None or not diff:
        return None
    dev = _rel(*diff["device_ms"])
    if dev is None or abs(dev) >= DEVICE_STILL:
        return None
    if (grew < HOST_GROWTH) if slower else (grew > -HOST_GROWTH / (1 + HOST_GROWTH)):
        return None
    return _cause(
        LAUNCH_PATH,
        f"host enqueue {ha:.4g} -> {hb:.4g} ms/iteration ({grew:+.1%}) while kernel time moved {dev:+.1%}",
        {
            "host_enqueue_ms_per_iteration": [_r(ha), _r(hb)],
            "kernel_device_ms_per_iteration": [_r(x) for x in diff["device_ms"]],
            "gpu_busy_share": [_r(_median(ref, "gpu_busy_share")), _r(_median(cand, "gpu_busy_share"))],
        },
    )


def queue_concurrency(ref: Sequence[Mapping], cand: Sequence[Mapping], diff: Mapping | None, slower: bool):
    if not diff or diff["appeared"] or diff["disappeared"] or diff["launch_changes"]:
        return None
    dev = _rel(*diff["device_ms"])
    ca, cb = _median(ref, "effective_concurrency"), _median(cand, "effective_concurrency")
    moved = _rel(ca, cb)
    if dev is None or abs(dev) >= DEVICE_STILL or moved is None:
        return None
    if (moved > -CONCURRENCY_DROP) if slower else (moved < CONCURRENCY_DROP):
        return None
    return _cause(
        QUEUE_CONCURRENCY,
        f"same kernels (device time {dev:+.1%}), effective concurrency {ca:.3g} -> {cb:.3g} ({moved:+.1%})",
        {
            "effective_concurrency": [_r(ca), _r(cb)],
            "kernel_device_ms_per_iteration": [_r(x) for x in diff["device_ms"]],
            "streams_with_work": [
                _r(_median(ref, "streams_with_work")),
                _r(_median(cand, "streams_with_work")),
            ],
        },
    )


def _nccl_config(name: str) -> dict[str, str]:
    m = _NCCL_ALGO.search(name)
    return {"algorithm": m.group(1), "protocol": m.group(2)} if m else {}


def collective_config(diff: Mapping | None) -> list[dict]:
    if not diff:
        return []
    by_op: dict[str, dict[str, list]] = {}
    for key, rows in (("gone", diff["disappeared"]), ("new", diff["appeared"])):
        for row in rows:
            if is_collective(row["family"] or ""):
                by_op.setdefault(row["family"], {"gone": [], "new": []})[key].append(row)
    out = []
    for fam in sorted(by_op):
        gone, new = by_op[fam]["gone"], by_op[fam]["new"]
        if not (gone and new):
            continue
        out.append(
            _cause(
                COLLECTIVE_CONFIG,
                f"{fam}: {', '.join(r['name'] for r in gone)} -> {', '.join(r['name'] for r in new)}",
                {
                    "op": fam,
                    "baseline_kernels": [
                        {"name": r["name"], "grid": (r.get("grid") or [None])[0], **_nccl_config(r["name"])}
                        for r in gone
                    ],
                    "candidate_kernels": [
                        {
                            "name": r["name"],
                            "grid": (r.get("grid") or [None, None])[1],
                            **_nccl_config(r["name"]),
                        }
                        for r in new
                    ],
                },
            )
        )
    for row in diff["shape_changes"]:
        grids = row.get("grid")
        if not is_collective(row["family"] or "") or not grids:
            continue
        if grids[0] != grids[1]:
            out.append(
                _cause(
                    COLLECTIVE_CONFIG,
                    f"{row['family']}: {row['name']} grid {grids[0]} -> {grids[1]} (channels)",
                    {"op": row["family"], "kernel": row["name"], "grid": grids, "block": row.get("block")},
                )
            )
    return out


def peer_wait(ref: Sequence[Mapping], cand: Sequence[Mapping], slower: bool) -> dict | None:
    ea, eb = _median(ref, "comm", "exposed_comm_ms"), _median(cand, "comm", "exposed_comm_ms")
    wa, wb = _median(ref, "comm", "exposed_wait_ms"), _median(cand, "comm", "exposed_wait_ms")
    ta, tb = _median(ref, "comm", "exposed_transfer_ms"), _median(cand, "comm", "exposed_transfer_ms")
    grew = _rel(ea, eb)
    if grew is None or None in (wa, wb, ta, tb):
        return None
    if (grew < COMM_GROWTH) if slower else (grew > -COMM_GROWTH):
        return None
    dw, dt = wb - wa, tb - ta  # type: ignore[operator]
    if not (abs(dw) > abs(dt) and (dw > 0) == slower):
        return None
    return _cause(
        PEER_WAIT,
        f"exposed communication {ea:.4g} -> {eb:.4g} ms/step: wait {dw:+.4g} ms, transfer {dt:+.4g} ms",
        {
            "exposed_comm_ms": [_r(ea), _r(eb)],
            "exposed_wait_ms": [_r(wa), _r(wb)],
            "exposed_transfer_ms": [_r(ta), _r(tb)],
        },
    )


def environment(ref_machine: Mapping | None, cand_machine: Mapping | None) -> dict | None:
    if not ref_machine or not cand_machine:
        return None
    rows = [
        {"group": r["group"], "name": r["name"], "baseline": r["values"]["a"], "candidate": r["values"]["b"]}
        for r in differences({"a": fingerprint(ref_machine), "b": fingerprint(cand_machine)})
        if r["group"] in ENVIRONMENT_GROUPS and r["name"] not in NOT_SETTINGS
    ]
    if not rows:
        return None
    return _cause(
        ENVIRONMENT,
        ", ".join(f"{r['name']} {r['baseline']} -> {r['candidate']}" for r in rows),
        {"differences": rows},
    )


# ------------------------------------------------------------------------------------------------ all
def find_causes(
    ref: Sequence[Mapping],
    cand: Sequence[Mapping],
    diff: Mapping | None,
    *,
    slower: bool,
    ref_machine: Mapping | None = None,
    cand_machine: Mapping | None = None,
) -> list[dict]:
    """Every cause whose rule holds, each with its evidence; else one ``unexplained`` saying what was
    checked and what neither side recorded."""
    found = [
        c
        for c in (
            throttle(ref, cand, slower),
            *kernel_selection(diff),
            launch_path(ref, cand, diff, slower),
            queue_concurrency(ref, cand, diff, slower),
            *collective_config(diff),
            peer_wait(ref, cand, slower),
            environment(ref_machine, cand_machine),
        )
        if c is not None
    ]
    if found:
        return found
    missing = [
        what
        for what, have in (
            ("kernel summaries", diff is not None),
            ("telemetry", any("telemetry" in e for e in ref) and any("telemetry" in e for e in cand)),
            ("host enqueue time", any("host_enqueue_ms_per_iteration" in e for e in cand)),
        )
        if not have
    ]
    return [
        _cause(
            UNEXPLAINED,
            "no rule holds"
            + (f"; not recorded: {', '.join(missing)}" if missing else "; every rule had its data"),
            {"checked": [c for c in CAUSES if c != UNEXPLAINED], "not_recorded": missing},
        )
    ]
