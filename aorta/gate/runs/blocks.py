"""Runs as blocks of an experiment: what a baseline run and a candidate run share, and the paired differences.

A gate's fresh run records what it shares with a run of the other side (``RUN_KEY`` in its JSON, written by
the child itself): its order seed (the benchmarks' order, and in ``aorta ab`` the pair's time slot), its kind
(``lean``: benchmarks only, or ``full``: the checks, kernel and labelled passes too) and its selection (which
benchmarks it ran). Two runs of one block measure under the same harness conditions, so the difference of
their log figures carries the stack's change and the run noise, not the harness's: on H200 pairing run k of
a baseline with run k of a candidate cut the median between-run noise of the 66 p0 figures from 2.08% to
0.70% (issue 45). Only runs of the kind ``lean`` (or a full run that measured as a lean one does: nothing in
it would have run otherwise) are samples; a full run of hardware-queue benchmarks is the check run.

Pure: plain numbers in, plain numbers out (docs/gate.md, "Runs paired by block").
"""

from __future__ import annotations

import hashlib
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from aorta.record.run_set import (
    RUN_KEY as RUN_KEY,  # re-exported: a run's block (aorta.gate.plugin writes it)
)

# Pairing spends degrees of freedom (df = pairs - 1, against m + n - 2 for independent runs): at 3 pairs
# and the auto gate's look level (0.002) the paired MDE is 20.6 x the within-block run noise, against 7.6 x
# the between-run noise unpaired at 3 v 3; at 5 pairs 5.9 x against 4.0 x, at 8 3.3 x against 2.8 x, at 12
# 2.4 x against 2.1 x: pairing wins from 5 pairs where the block carries more than half of the between-run
# variance, from 8 a third, from 12 a fifth (issue 45 measured 89%). Below MIN_PAIRS the runs are judged as
# independent: valid either way (shared blocks only widen the unpaired interval); the choice is made by the
# design (how many blocks both sides hold), never by the result.
MIN_PAIRS = 5
LOOKS_KEY = "aorta_looks"  # in an auto gate's combined runs: {"looks": N}, the looks its verdicts used
LEAN, FULL = "lean", "full"


def selection_id(nodeids: Sequence[str]) -> str:
    """A short id of the set of benchmarks a run took (order apart: the seed says the order)."""
    return hashlib.sha256("\n".join(sorted(nodeids)).encode()).hexdigest()[:12]


def is_benchmark_item(item) -> bool:
    """A pytest item that times something (it takes pytest-benchmark's fixture); the others are checks."""
    return "benchmark" in getattr(item, "fixturenames", ())


def run_block(
    seed: int, kind: str, selection: str, sample: bool, start: str = "exec", code: str = ""
) -> dict:
    """What a run records of itself: ``sample`` False for a check run (a full run of workloads whose lean
    run measures otherwise), which never counts as a sample; ``start``: how its process was made (``fork``
    from the fork server, ``exec`` from nothing: ``aorta.processes.fork_server``), said, not paired on;
    ``code``: a hash of the code it ran (``aorta.gate.session.check_pass``), not paired on either."""
    if kind not in (LEAN, FULL):
        raise ValueError(f"a run's kind is {LEAN!r} or {FULL!r}, got {kind!r}")
    block = {"seed": int(seed), "kind": kind, "selection": selection, "sample": bool(sample), "start": start}
    return {**block, "code": code} if code else block


def block_key(block: Mapping | None) -> str | None:
    """The key two runs must share to be paired (None: the run recorded no block, an older aorta's)."""
    if not isinstance(block, Mapping) or "seed" not in block:
        return None
    return f"seed {block.get('seed')}, {block.get('kind')}, selection {block.get('selection')}"


def is_sample(block: Mapping | None) -> bool:
    """A run whose figures are samples: every run without a block (older aorta), and every run that says so."""
    return not isinstance(block, Mapping) or bool(block.get("sample", True))


@dataclass(frozen=True)
class Paired:
    """Paired log differences of one figure: one per block that both sides hold (each side's runs of a
    block averaged on the log scale first)."""

    diffs: tuple[float, ...]  # log(candidate) - log(baseline), one per shared block
    ref_logs: tuple[float, ...]  # each shared block's baseline mean log, same order
    cand_logs: tuple[float, ...]
    unpaired_ref: int  # baseline runs of blocks the candidate lacks (left out)
    unpaired_cand: int  # candidate runs of blocks the baseline lacks (left out)

    @property
    def pairs(self) -> int:
        return len(self.diffs)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.diffs)

    @property
    def sd(self) -> float:
        """SD of the paired differences (needs two pairs)."""
        return statistics.stdev(self.diffs)

    def note(self) -> str:
        left = self.unpaired_ref + self.unpaired_cand
        out = f"{self.pairs} pairs (runs paired by order seed, kind and selection)"
        return out + (f"; {left} run(s) without a partner left out" if left else "")


def pair(
    ref_values: Sequence[float],
    ref_blocks: Sequence[str | None],
    cand_values: Sequence[float],
    cand_blocks: Sequence[str | None],
    *,
    min_pairs: int = MIN_PAIRS,
) -> Paired | None:
    """The paired differences where every run names its block and at least ``MIN_PAIRS`` blocks are shared;
    None otherwise (the compare then treats the runs as independent, as before blocks were recorded). Values must
    be positive (log ratios)."""
    if len(ref_blocks) != len(ref_values) or len(cand_blocks) != len(cand_values):
        return None
    if any(b is None for b in (*ref_blocks, *cand_blocks)):
        return None
    if any(v <= 0 for v in (*ref_values, *cand_values)):
        return None
    ref = _by_block(ref_values, ref_blocks)
    cand = _by_block(cand_values, cand_blocks)
    shared = [b for b in cand if b in ref]
    if len(shared) < max(min_pairs, 2):
        return None
    rl = tuple(statistics.fmean(ref[b]) for b in shared)
    cl = tuple(statistics.fmean(cand[b]) for b in shared)
    return Paired(
        diffs=tuple(c - r for c, r in zip(cl, rl)),
        ref_logs=rl,
        cand_logs=cl,
        unpaired_ref=sum(len(v) for b, v in ref.items() if b not in cand),
        unpaired_cand=sum(len(v) for b, v in cand.items() if b not in ref),
    )


def why_unpaired(
    ref_blocks: Sequence[str | None], cand_blocks: Sequence[str | None], *, min_pairs: int = MIN_PAIRS
) -> str | None:
    """Why the two sides' runs cannot be paired (None where they can): said in the compare's header, so that a
    compare judged as independent runs says what kept it from pairing (issue 55, item 6)."""
    if not ref_blocks or any(b is None for b in ref_blocks):
        return "the baseline's runs name no blocks (saved by an older aorta, or by one run)"
    if not cand_blocks or any(b is None for b in cand_blocks):
        return "this run's runs name no blocks"
    shared = set(ref_blocks) & set(cand_blocks)
    if len(shared) >= max(min_pairs, 2):
        return None
    ref_kinds, cand_kinds = {_kind(b) for b in ref_blocks}, {_kind(b) for b in cand_blocks}
    if not ref_kinds & cand_kinds:
        return (
            f"kinds differ: the baseline's runs are {', '.join(sorted(ref_kinds))}, this run's "
            f"{', '.join(sorted(cand_kinds))} (save and compare with one aorta: both run lean samples)"
        )
    if not {_selection(b) for b in ref_blocks} & {_selection(b) for b in cand_blocks}:
        return "the two sides ran other benchmarks (their selections differ)"
    return f"{len(shared)} shared block(s), {max(min_pairs, 2)} needed to pair (save the baseline with more runs)"


def _kind(key: str | None) -> str:
    parts = str(key).split(", ")
    return parts[1] if len(parts) > 2 else "?"


def _selection(key: str | None) -> str:
    return str(key).rsplit("selection ", 1)[-1]


def _by_block(values: Sequence[float], blocks: Sequence[str | None]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for v, b in zip(values, blocks):
        out.setdefault(str(b), []).append(math.log(v))
    return out


def paired_seeds(entries: Sequence) -> list[int]:
    """The order seeds of a baseline's lean sample runs (its stored entries), oldest first, each once: a
    candidate's repeat runs take them in turn, so each has a partner ([] where a run names no block: an
    older aorta's baseline, judged as independent runs)."""
    seeds: list[int] = []
    for e in entries:
        block = e.get("block") if isinstance(e, Mapping) else None
        if not isinstance(block, Mapping):
            return []
        seed = int(block.get("seed", 0))
        if block.get("kind") == LEAN and seed not in seeds:
            seeds.append(seed)
    return seeds


def check_was_sample(entries: Sequence) -> int:
    """1 where a baseline's check run was one of its samples (a command with no checks apart), else 0."""
    return int(
        any(
            isinstance(e, Mapping)
            and isinstance(e.get("block"), Mapping)
            and e["block"].get("kind") == FULL
            and e["block"].get("sample")
            for e in entries
        )
    )
