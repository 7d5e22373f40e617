"""Did each cell's setting take effect? Evidence from the cell's own run (pure: no torch, no processes).

A sweep cell's setting can do nothing at all: a misspelt variable, one the library no longer reads, a value it
clamps. For each cell and each swept knob this module gathers what the run itself shows:

- ``library_report``: the library says it read the variable: NCCL / RCCL with ``NCCL_DEBUG=INFO`` print
  ``NCCL INFO NCCL_ALGO set by environment to Ring`` for every ``NCCL_*`` parameter they read from the
  environment (NCCL's ``ncclLoadParam`` / ``NCCL_PARAM``); a variable they do not know prints nothing;
- ``trace``: the collective kernels in the cell's kernel summaries (aorta/timeline/kernel_summary.py) match the
  setting: ``NCCL_ALGO`` / ``NCCL_PROTO`` in the kernel names (``..._RING_LL``), ``NCCL_NTHREADS`` as the
  block size, ``NCCL_MAX_NCHANNELS`` / ``NCCL_MAX_CTAS`` (at most) and ``NCCL_MIN_NCHANNELS`` /
  ``NCCL_MIN_CTAS`` (at least) as the grid size; a mismatch is ``contradicted`` (clamped or ignored);
- ``config_read_back``: an ``--override`` key's value in the configuration the run recorded;
- ``other_cells``: the cells that differ from this one only in this knob ran other kernels (names, grids or
  blocks), or moved a benchmark's effective concurrency by ``CONCURRENCY_MOVE`` or more;
- ``env_read_back``: the run recorded the variable among its scheduling settings. It shows the value reached
  the process, not that anything read it: alone it is no evidence of an effect.

A knob whose run shows none of the first four is flagged: ``no evidence the knob took effect``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aorta.gate.causes.kernel_diff import kernel_diff
from aorta.timeline.kernel_names import is_collective

TOOK_EFFECT, CONTRADICTED, NO_EVIDENCE = "took_effect", "contradicted", "no_evidence"
NO_EVIDENCE_TEXT = "no evidence the knob took effect"
# Between fresh runs a host-bound workload's concurrency moves by tens of percent (docs/measurements.md):
# only a larger move is read as the knob's
CONCURRENCY_MOVE = 0.25
# "NCCL INFO NCCL_ALGO set by environment to Ring" (NCCL 2.x; RCCL prints the same)
_SET_BY_ENV = re.compile(r"NCCL INFO (\w+) set by environment to (.+?)\.?\s*$", re.MULTILINE)
_ALGO_PROTO = re.compile(r"_(RING|TREE|COLLNET_DIRECT|COLLNET_CHAIN|NVLS_TREE|NVLS|PAT)_(LL128|LL|SIMPLE)$")
_ALGO_NAMES = {
    "ring": "RING",
    "tree": "TREE",
    "collnetdirect": "COLLNET_DIRECT",
    "collnetchain": "COLLNET_CHAIN",
    "nvls": "NVLS",
    "nvlstree": "NVLS_TREE",
    "pat": "PAT",
}


@dataclass
class CellRun:
    """One finished cell: its settings by kind, its benchmark JSON and its log."""

    id: str
    env: dict[str, str] = field(default_factory=dict)
    overrides: dict[str, str] = field(default_factory=dict)
    doc: Mapping | None = None
    log_text: str = ""

    @property
    def settings(self) -> dict[str, str]:
        return {**self.env, **self.overrides}


def library_reports(log_text: str) -> dict[str, str]:
    """``{variable: value}`` from the library's own ``set by environment`` lines."""
    return {m.group(1): m.group(2).strip() for m in _SET_BY_ENV.finditer(log_text or "")}


def _extra(bench: Mapping) -> Mapping:
    extra = bench.get("extra_info")
    return extra if isinstance(extra, Mapping) else {}


def kernel_summaries(doc: Mapping | None) -> dict[str, Mapping]:
    """``{benchmark fullname: kernel summary}`` of a cell's run."""
    out = {}
    for bench in (doc or {}).get("benchmarks", ()):
        summary = _extra(bench).get("kernel_summary")
        if isinstance(summary, Mapping):
            out[str(bench.get("fullname"))] = summary
    return out


def collective_kernels(doc: Mapping | None) -> list[Mapping]:
    return [
        k
        for summary in kernel_summaries(doc).values()
        for k in summary.get("kernels") or ()
        if is_collective(str(k.get("family") or ""))
    ]


def _trace_check(name: str, value: str, kernels: Sequence[Mapping]) -> dict | None:
    """A trace reading for the collective knobs this module knows; None for other knobs or no collectives."""
    if not kernels:
        return None
    if name in ("NCCL_ALGO", "NCCL_PROTO"):
        found = [m for m in (_ALGO_PROTO.search(str(k["name"])) for k in kernels) if m]
        if not found:
            return None
        group = 1 if name == "NCCL_ALGO" else 2
        seen = sorted({m.group(group) for m in found})
        if ";" in value or ":" in value or value.startswith("^"):  # per-collective or exclusion lists
            return {"kind": "trace", "ok": True, "what": f"collective kernels ran with {', '.join(seen)}"}
        wanted = {
            (_ALGO_NAMES.get(v.strip().lower(), v.strip().upper()) if group == 1 else v.strip().upper())
            for v in value.split(",")
        }
        ok = set(seen) <= wanted
        return {"kind": "trace", "ok": ok, "what": f"collective kernels ran with {', '.join(seen)}"}
    dims = {
        "NCCL_NTHREADS": ("block", "=="),
        "NCCL_MAX_NCHANNELS": ("grid", "<="),
        "NCCL_MAX_CTAS": ("grid", "<="),
        "NCCL_MIN_NCHANNELS": ("grid", ">="),
        "NCCL_MIN_CTAS": ("grid", ">="),
    }
    if name not in dims or not value.isdigit():
        return None
    key, op = dims[name]
    sizes = sorted({int(k[key][0]) for k in kernels if isinstance(k.get(key), list) and k[key]})
    if not sizes:
        return None
    n = int(value)
    ok = all(s == n if op == "==" else s <= n if op == "<=" else s >= n for s in sizes)
    return {"kind": "trace", "ok": ok, "what": f"collective kernels' {key} x: {sizes} (setting {op} {n})"}


def _config_check(key: str, value: str, doc: Mapping | None) -> dict | None:
    for bench in (doc or {}).get("benchmarks", ()):
        config = _extra(bench).get("config")
        if not isinstance(config, Mapping):
            continue
        node: Any = config
        for part in key.split("."):
            node = node.get(part) if isinstance(node, Mapping) else None
        if node is None:
            return {"kind": "config_read_back", "ok": False, "what": f"{key} is not in the recorded config"}
        return {
            "kind": "config_read_back",
            "ok": str(node) == value,
            "what": f"recorded config {key} = {node}",
        }
    return None


def _env_read_back(name: str, value: str, doc: Mapping | None) -> dict | None:
    env = (((doc or {}).get("machine_info") or {}).get("aorta") or {}).get("env") or {}
    if name not in env:
        return None
    return {
        "kind": "env_read_back",
        "ok": None,  # reached the process: no evidence that anything read it
        "what": f"the run recorded {name}={env[name]}"
        + ("" if env[name] == value else f" (cell set {value})"),
    }


def _ran_other_kernels(mine: Mapping, theirs: Mapping) -> bool:
    """A kernel came or went (one the other summary's ``other`` bucket cannot hide: timing noise that only
    reorders the list is not a change), or a kernel on both sides ran another grid or block."""
    diff = kernel_diff([mine], [theirs])
    if diff is None:
        return False
    return bool(diff["appeared"] or diff["disappeared"] or diff["shape_changes"])


def _concurrency(doc: Mapping | None) -> dict[str, float]:
    out = {}
    for bench in (doc or {}).get("benchmarks", ()):
        value = _extra(bench).get("effective_concurrency")
        if isinstance(value, (int, float)) and value > 0:
            out[str(bench.get("fullname"))] = float(value)
    return out


def _other_cells(cell: CellRun, knob: str, cells: Sequence[CellRun]) -> dict | None:
    """Cells that differ from ``cell`` only in ``knob``: did they run other kernels, or other concurrency?"""
    rest = {k: v for k, v in cell.settings.items() if k != knob}
    peers = [
        c
        for c in cells
        if c is not cell
        and c.doc is not None
        and {k: v for k, v in c.settings.items() if k != knob} == rest
        and c.settings.get(knob) != cell.settings.get(knob)
    ]
    mine, conc = kernel_summaries(cell.doc), _concurrency(cell.doc)
    for peer in peers:
        theirs = kernel_summaries(peer.doc)
        differs = sorted(n for n in mine if n in theirs and _ran_other_kernels(mine[n], theirs[n]))
        if differs:
            return {
                "kind": "other_cells",
                "ok": True,
                "what": f"{len(differs)} benchmark(s) ran other kernels with {knob}={peer.settings.get(knob)} "
                f"(cell {peer.id}), e.g. {differs[0]}",
            }
        pc = _concurrency(peer.doc)
        for name in sorted(set(conc) & set(pc)):
            if abs(conc[name] / pc[name] - 1.0) >= CONCURRENCY_MOVE:
                return {
                    "kind": "other_cells",
                    "ok": True,
                    "what": f"{name}: effective concurrency {pc[name]:.3g} with {knob}={peer.settings.get(knob)} "
                    f"(cell {peer.id}), {conc[name]:.3g} here",
                }
    return None


def knob_evidence(cell: CellRun, cells: Sequence[CellRun]) -> dict[str, dict]:
    """``{knob: {"value", "status", "evidence": [...], "summary"}}`` for each of the cell's settings."""
    reports = library_reports(cell.log_text)
    collectives = collective_kernels(cell.doc)
    out = {}
    for knob, value in cell.settings.items():
        items: list[dict | None] = []
        if knob in cell.overrides:
            items.append(_config_check(knob, value, cell.doc))
        else:
            if knob in reports:
                said = reports[knob]
                items.append(
                    {
                        "kind": "library_report",
                        "ok": said == value or said.lower() == value.lower(),
                        "what": f"the library reports {knob} set by environment to {said}",
                    }
                )
            items.append(_trace_check(knob, value, collectives))
            items.append(_env_read_back(knob, value, cell.doc))
        items.append(_other_cells(cell, knob, cells))
        evidence = [e for e in items if e is not None]
        if any(e["ok"] is False for e in evidence):
            status = CONTRADICTED
            summary = "; ".join(e["what"] for e in evidence if e["ok"] is False)
        elif any(e["ok"] for e in evidence):
            status, summary = TOOK_EFFECT, "; ".join(e["what"] for e in evidence if e["ok"])
        else:
            status = NO_EVIDENCE
            summary = NO_EVIDENCE_TEXT + (
                f" ({'; '.join(e['what'] for e in evidence)})"
                if evidence
                else " (nothing in the run shows it)"
            )
        out[knob] = {"value": value, "status": status, "summary": summary, "evidence": evidence}
    return out


def sweep_evidence(cells: Sequence[CellRun]) -> list[dict]:
    """Per finished cell (one with a benchmark JSON): ``{"cell", "knobs"}``."""
    return [{"cell": c.id, "knobs": knob_evidence(c, cells)} for c in cells if c.doc is not None]


def evidence_lines(report: Sequence[Mapping]) -> list[str]:
    lines = []
    for row in report:
        for knob, k in row["knobs"].items():
            flag = "NO EVIDENCE" if k["status"] == NO_EVIDENCE else k["status"]
            lines.append(f"  {row['cell']}: {knob}={k['value']}: {flag}: {k['summary']}")
    return lines
