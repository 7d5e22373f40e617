"""The gate's fresh runs, in process and in milliseconds (pure argument handling; the child processes are a
scripted stand-in for ``python -m pytest``): the command each child gets, the order it runs the benchmarks in,
and what counts as a good run. The slow tier runs real children (tests/gate/test_gate_plugin.py)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from aorta.gate.runs import fresh_runs


# ---------------------------------------------------------------------------------- the child's command
def test_a_child_gets_the_parents_command_without_the_gates_options_or_their_values(tmp_path):
    parent = [
        "benchmarks/hw_queue",
        "-m",
        "p0",
        "--aorta-compare",
        "rocm-7.0.8",
        "--aorta-runs",
        "3",
        "--aorta-baseline-dir=/b",
        "--benchmark-json",
        "run.json",
        "--aorta-allow-mismatch",
        "-k",
        "moe",
    ]
    child = fresh_runs.child_args(parent, json_path=tmp_path / "run2.json", seed=2)
    assert child == [
        "benchmarks/hw_queue",
        "-m",
        "p0",
        "-k",
        "moe",
        f"--benchmark-json={tmp_path / 'run2.json'}",
        "--aorta-order-seed=2",
        "--aorta-runs=1",
        "--aorta-confirm=0",
        "--aorta-kernel-pass-rounds=2",  # a gate's runs profile fewer rounds (aorta/hw_queue/kernel_pass.py)
    ]


def test_a_childs_kernel_pass_rounds_are_the_users_where_given(tmp_path):
    child = fresh_runs.child_args(
        ["benchmarks", "--aorta-kernel-pass-rounds=4"], json_path=tmp_path / "c.json", seed=1
    )
    assert [a for a in child if a.startswith("--aorta-kernel-pass-rounds")] == [
        "--aorta-kernel-pass-rounds=4"
    ]


def test_a_confirmation_child_runs_only_the_suspects(tmp_path):
    only = tmp_path / "confirm-only.txt"
    child = fresh_runs.child_args(
        ["benchmarks", "--aorta-confirm", "2"], json_path=tmp_path / "c.json", seed=5, only_file=only
    )
    assert child[0] == "benchmarks" and "2" not in child
    assert f"--aorta-only-file={only}" in child


# -------------------------------------------------------------------------------------------- the order
NODEIDS = [f"{f}.py::t{i}" for f in ("a", "b", "c", "d", "e", "f") for i in range(2)]


def test_seed_0_keeps_the_collected_order():
    assert fresh_runs.order_items(NODEIDS, 0) == list(range(len(NODEIDS)))


def test_an_order_seed_gives_the_same_order_whatever_else_drew_random_numbers():
    # --aorta-order-seed reproduces a run's order: every rank of a torchrun, and a rerun, draws the same
    orders = []
    for other in (1, 2, 3):
        random.seed(other)  # another user of the global generator (a workload's data, hypothesis)
        orders.append(fresh_runs.order_items(NODEIDS, 4))
    assert orders[0] == orders[1] == orders[2]
    files = [NODEIDS[i].split("::")[0] for i in orders[0][::2]]
    expected = ["a", "b", "c", "d", "e", "f"]
    random.Random(4).shuffle(expected)  # the seed's own generator
    assert files == [f"{f}.py" for f in expected]


def test_odd_seeds_run_each_files_items_last_to_first():
    order = fresh_runs.order_items(NODEIDS, 3)
    assert sorted(order) == list(range(len(NODEIDS)))  # every item once
    pairs = [order[i : i + 2] for i in range(0, len(order), 2)]
    assert all(second == first - 1 for first, second in pairs)
    even = fresh_runs.order_items(NODEIDS, 4)
    assert all(b == a + 1 for a, b in (even[i : i + 2] for i in range(0, len(even), 2)))


# ------------------------------------------------------------------------------------ good and bad runs
def scripted_children(monkeypatch, outcomes: list[tuple[int, bool]]) -> list[list[str]]:
    """Stand in for the child processes: the k-th exits ``outcomes[k][0]`` and writes its JSON where it was
    told to only when ``outcomes[k][1]``. Returns the commands started."""
    started: list[list[str]] = []

    def call(cmd, **_kw):
        code, writes = outcomes[len(started)]
        started.append(cmd)
        if writes:
            path = next(a.split("=", 1)[1] for a in cmd if a.startswith("--benchmark-json="))
            Path(path).write_text("{}")
        return code, ""

    monkeypatch.setattr(fresh_runs, "call_to_end", call)
    return started


def test_a_child_that_exits_0_without_writing_its_json_is_a_failed_run_and_the_gate_stops(
    tmp_path, monkeypatch
):
    started = scripted_children(monkeypatch, [(0, True), (0, False), (0, True)])
    said: list[str] = []
    runs = fresh_runs.run_children(["benchmarks"], cwd=tmp_path, out_dir=tmp_path, count=3, say=said.append)
    assert [r.ok for r in runs] == [True, False] and len(started) == 2
    assert said[1].startswith("aorta gate: run 2/3: FAILED (exit 0, no JSON) in ")


def test_after_a_child_fails_no_further_child_is_started(tmp_path, monkeypatch):
    started = scripted_children(monkeypatch, [(0, True), (1, True), (0, True)])
    said: list[str] = []
    runs = fresh_runs.run_children(["benchmarks"], cwd=tmp_path, out_dir=tmp_path, count=3, say=said.append)
    assert [(r.label, r.exit_code, r.ok) for r in runs] == [("run 1/3", 0, True), ("run 2/3", 1, False)]
    assert len(started) == 2 and said[1].startswith("aorta gate: run 2/3: FAILED (exit 1) in ")


def test_every_child_writes_its_own_json_and_log_with_its_own_seed(tmp_path, monkeypatch):
    started = scripted_children(monkeypatch, [(0, True)] * 2)
    runs = fresh_runs.run_children(
        ["benchmarks"],
        cwd=tmp_path,
        out_dir=tmp_path,
        count=2,
        kind="confirm",
        first_seed=7,
        say=lambda s: None,
    )
    assert [r.json_path.name for r in runs] == ["confirm1.json", "confirm2.json"]
    assert [r.log_path.name for r in runs] == ["confirm1.log", "confirm2.log"]
    assert [next(a for a in c if a.startswith("--aorta-order-seed=")) for c in started] == [
        "--aorta-order-seed=7",
        "--aorta-order-seed=8",
    ]


@pytest.mark.parametrize("code, writes, ok", [(0, True, True), (0, False, False), (2, True, False)])
def test_a_run_is_good_only_when_it_exits_0_and_left_its_json(tmp_path, code, writes, ok):
    json_path = tmp_path / "run1.json"
    if writes:
        json_path.write_text("{}")
    assert fresh_runs.ChildRun("run 1/1", code, json_path, tmp_path / "run1.log", 1.0).ok is ok
