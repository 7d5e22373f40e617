"""Which benchmarks a run runs and in which order (a fresh run's ``--aorta-order-seed``, ``--aorta-only-file``,
a lean run's benchmarks only), and the block it records (``aorta.gate.runs.blocks``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aorta.gate.runs import blocks, fresh_runs
from aorta.gate.session import check_pass
from aorta.gate.session.state import CODE_HASH, LEAN_MODE_FIXTURE, RUN_BLOCK
from aorta.hw_queue.marks import CHECK_RUN_ONLY, LEAN_MODE
from aorta.processes import fork_server


def select_items(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A fresh-process run's order (``--aorta-order-seed``) and benchmarks (``--aorta-only-file``); first, the
    hash of the code the collected tests run (``check_pass.code_hash``: a check run and a lean run of one
    command hash the same files, whatever each then leaves out)."""
    config.stash[CODE_HASH] = run_code_hash(config, items)
    only_file = config.getoption("aorta_only_file")
    if only_file:
        try:
            wanted = {line.strip() for line in Path(only_file).read_text().splitlines() if line.strip()}
        except OSError as exc:
            raise pytest.UsageError(
                f"--aorta-only-file={only_file}: cannot be read ({exc.strerror})"
            ) from None
        dropped = [i for i in items if i.nodeid not in wanted]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = [i for i in items if i.nodeid in wanted]
    if config.getoption("aorta_lean_run", False):  # a repeat run times benchmarks only (issue 45, item 3)
        checks = [i for i in items if not is_sample_item(i)]
        if checks:
            config.hook.pytest_deselected(items=checks)
            items[:] = [i for i in items if is_sample_item(i)]
    seed = config.getoption("aorta_order_seed")
    if seed:
        order = fresh_runs.order_items([i.nodeid for i in items], seed)
        items[:] = [items[k] for k in order]


def run_code_hash(config: pytest.Config, items: list[pytest.Item]) -> str:
    """The code a run of ``items`` runs (``aorta.gate.session.check_pass``)."""
    import aorta

    root, paths = getattr(config, "rootpath", None), [getattr(i, "path", None) for i in items]
    if root is None or None in paths:
        return ""  # no code hash: no record matches, the check run runs
    rootdir = Path(str(root))
    files = check_pass.code_files(
        Path(aorta.__file__).parent, {Path(str(p)) for p in paths}, rootdir, getattr(config, "inipath", None)
    )
    return check_pass.code_hash(files, rootdir)


def is_sample_item(item: pytest.Item) -> bool:
    """A test a lean run keeps: a benchmark that is not a check run's alone (a known answer: ``CHECK_RUN_ONLY``)."""
    return blocks.is_benchmark_item(item) and item.get_closest_marker(CHECK_RUN_ONLY) is None


def has_lean_mode(item: pytest.Item) -> bool:
    """A benchmark that measures less in a lean run than in a full one (the hardware-queue runner's workloads, the
    FSDP collective sweep: ``LEAN_MODE``)."""
    return (
        LEAN_MODE_FIXTURE in getattr(item, "fixturenames", ())
        or item.get_closest_marker(LEAN_MODE) is not None
    )


def record_block(session: pytest.Session) -> None:
    """What this run shares with a run of the other side of a compare (``aorta.gate.runs.blocks``): recorded in
    its JSON by ``pytest_benchmark_update_json``."""
    config = session.config
    lean = bool(config.getoption("aorta_lean_run", False))
    items = session.items
    # a full run is a sample only where a lean run of the same command would run the same way: no check
    # among its tests and no workload with a lean mode (the hardware-queue runner's)
    like_lean = all(is_sample_item(i) and not has_lean_mode(i) for i in items)
    config.stash[RUN_BLOCK] = blocks.run_block(
        config.getoption("aorta_order_seed") or 0,
        blocks.LEAN if lean else blocks.FULL,
        blocks.selection_id([i.nodeid for i in items]),
        sample=lean or like_lean,
        start=os.environ.get(fork_server.START_KEY) or "exec",
        code=config.stash.get(CODE_HASH, ""),
    )
