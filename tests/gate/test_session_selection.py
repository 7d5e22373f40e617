"""Which benchmarks a run runs, in which order, and the block it records (``aorta.gate.session.selection``);
what a gate keeps and says (``state``); where a run's wall went (``wall_record``). In this process, on small
fake items and configs: a benchmark is an item that takes the ``benchmark`` fixture; the names tell the
files, the orders and the kinds apart."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from aorta.gate.runs import blocks, fresh_runs
from aorta.gate.session import selection, state, wall_record
from aorta.hw_queue.marks import CHECK_RUN_ONLY, LEAN_MODE
from aorta.processes import fork_server


class Item:
    def __init__(self, nodeid: str, fixtures=("benchmark",), marks=()) -> None:
        self.nodeid, self.fixturenames, self.marks = nodeid, tuple(fixtures), set(marks)

    def get_closest_marker(self, name):
        return object() if name in self.marks else None

    def __repr__(self) -> str:
        return self.nodeid


NOTSET = object()


class Config:
    def __init__(self, **opts) -> None:
        self.opts, self.deselected, self.stash = opts, [], {}
        self.hook = SimpleNamespace(pytest_deselected=lambda items: self.deselected.append(list(items)))

    def getoption(self, name, default=NOTSET):
        """As pytest's: an option nobody declared is a ``ValueError`` unless a default is given."""
        if name in self.opts:
            return self.opts[name]
        if default is NOTSET:
            raise ValueError(f"no option named {name!r}")
        return default


def gate_config(**opts) -> Config:
    """A config with the gate's selection options declared (their defaults unless given), as the gate's are."""
    return Config(**{"aorta_only_file": None, "aorta_order_seed": 0, "aorta_lean_run": False, **opts})


def ids(items) -> list[str]:
    return [i.nodeid for i in items]


A1, A2, B1, B2 = "a.py::t1", "a.py::t2", "b.py::t1", "b.py::t2"


# ------------------------------------------------------------------------------------------ select_items
def test_no_option_keeps_every_item_in_its_order():
    items, c = [Item(n) for n in (A1, A2, B1, B2)], gate_config(aorta_order_seed=0)
    selection.select_items(c, items)
    assert (ids(items), c.deselected) == ([A1, A2, B1, B2], [])


def test_only_file_keeps_the_listed_items_in_the_collected_order(tmp_path):
    only = tmp_path / "only.txt"
    only.write_text(f"  {B2}\n\n{A1}  \n")  # stripped, blank lines ignored, its order not the run's
    items, c = [Item(n) for n in (A1, A2, B1, B2)], gate_config(aorta_only_file=str(only), aorta_order_seed=0)
    selection.select_items(c, items)
    assert ids(items) == [A1, B2]
    assert [ids(d) for d in c.deselected] == [[A2, B1]]  # said to pytest once, the dropped ones only


def test_only_file_that_lists_every_item_deselects_nothing(tmp_path):
    only = tmp_path / "only.txt"
    only.write_text("\n".join([B1, A1]))
    items, c = [Item(A1), Item(B1)], gate_config(aorta_only_file=str(only))
    selection.select_items(c, items)
    assert (ids(items), c.deselected) == ([A1, B1], [])


def test_an_only_file_that_cannot_be_read_is_refused_naming_it(tmp_path):
    missing = tmp_path / "gone.txt"
    with pytest.raises(pytest.UsageError) as exc:
        selection.select_items(gate_config(aorta_only_file=str(missing)), [Item(A1)])
    assert str(exc.value) == f"--aorta-only-file={missing}: cannot be read (No such file or directory)"


def test_a_lean_run_keeps_the_benchmarks_that_are_samples():
    check = Item("a.py::known", marks=[CHECK_RUN_ONLY])
    plain = Item("a.py::plain", fixtures=("tmp_path",))
    lean_mode = Item(B1, fixtures=("benchmark", "hw_queue"), marks=[LEAN_MODE])  # still a sample
    items = [check, Item(A1), plain, lean_mode]
    c = gate_config(aorta_lean_run=True)
    selection.select_items(c, items)
    assert ids(items) == [A1, B1]
    assert [ids(d) for d in c.deselected] == [["a.py::known", "a.py::plain"]]


def test_a_lean_run_of_samples_only_deselects_nothing():
    items, c = [Item(A1), Item(B1)], gate_config(aorta_lean_run=True)
    selection.select_items(c, items)
    assert (ids(items), c.deselected) == ([A1, B1], [])


def test_a_full_run_keeps_its_checks():
    items = [Item("a.py::known", marks=[CHECK_RUN_ONLY]), Item(A1, fixtures=())]
    c = gate_config(aorta_lean_run=False)
    selection.select_items(c, items)
    assert (ids(items), c.deselected) == (["a.py::known", A1], [])


@pytest.mark.parametrize("seed", [1, 2, 7])
def test_an_order_seed_runs_the_items_in_its_order(seed):
    names = [A1, A2, B1, B2, "c.py::t1"]
    items = [Item(n) for n in names]
    selection.select_items(gate_config(aorta_order_seed=seed), items)
    want = [names[k] for k in fresh_runs.order_items(names, seed)]
    assert ids(items) == want and want != names


def test_the_only_file_then_the_lean_cut_then_the_order(tmp_path):
    only = tmp_path / "only.txt"
    only.write_text("\n".join([A1, A2, B1, "b.py::known"]))
    names = [A1, A2, B1, "b.py::known", B2]
    items = [Item(n, marks=[CHECK_RUN_ONLY] if "known" in n else []) for n in names]
    c = gate_config(aorta_only_file=str(only), aorta_lean_run=True, aorta_order_seed=3)
    selection.select_items(c, items)
    kept = [A1, A2, B1]
    assert ids(items) == [kept[k] for k in fresh_runs.order_items(kept, 3)]
    assert [ids(d) for d in c.deselected] == [[B2], ["b.py::known"]]


def test_a_sample_is_a_benchmark_not_marked_check_run_only_and_lean_mode_by_fixture_or_mark():
    assert selection.is_sample_item(Item(A1))
    assert not selection.is_sample_item(Item(A1, fixtures=("tmp_path",)))
    assert not selection.is_sample_item(Item(A1, marks=[CHECK_RUN_ONLY]))
    assert selection.has_lean_mode(Item(A1, fixtures=("benchmark", "hw_queue")))  # aorta.plugin's fixture
    assert selection.has_lean_mode(Item(A1, marks=[LEAN_MODE]))
    assert not selection.has_lean_mode(Item(A1, marks=[CHECK_RUN_ONLY]))
    assert not selection.has_lean_mode(
        SimpleNamespace(get_closest_marker=lambda name: None)
    )  # no fixturenames


# ------------------------------------------------------------------------------------------ record_block
def block(monkeypatch, items, start=None, **opts) -> dict:
    if start is None:
        monkeypatch.delenv(fork_server.START_KEY, raising=False)
    else:
        monkeypatch.setenv(fork_server.START_KEY, start)
    c = gate_config(**opts)
    selection.record_block(SimpleNamespace(config=c, items=items))
    return c.stash[state.RUN_BLOCK]


def test_a_lean_run_records_a_lean_sample_block_of_its_seed_and_selection(monkeypatch):
    got = block(monkeypatch, [Item(B1), Item(A1)], start="fork", aorta_lean_run=True, aorta_order_seed=5)
    want = {"seed": 5, "kind": blocks.LEAN, "selection": blocks.selection_id([A1, B1]), "sample": True}
    assert got == {**want, "start": "fork"}


def test_a_full_run_of_samples_only_is_a_sample_and_started_by_exec_by_default(monkeypatch):
    got = block(monkeypatch, [Item(A1), Item(B1)])
    assert got == {"seed": 0, "kind": blocks.FULL, "selection": blocks.selection_id([A1, B1]), "sample": True,
                   "start": "exec"}  # fmt: skip


@pytest.mark.parametrize(
    "other",
    [
        Item("a.py::known", marks=[CHECK_RUN_ONLY]),  # a check among its tests
        Item("a.py::plain", fixtures=("tmp_path",)),  # a test that is no benchmark
        Item("a.py::hw", fixtures=("benchmark", "hw_queue")),  # a workload a lean run measures less
        Item("a.py::sweep", marks=[LEAN_MODE]),
    ],
)
def test_a_full_run_with_a_check_or_a_lean_mode_workload_is_no_sample(monkeypatch, other):
    got = block(monkeypatch, [Item(A1), other], aorta_order_seed=2)
    assert (got["kind"], got["sample"], got["seed"]) == (blocks.FULL, False, 2)
    lean = block(monkeypatch, [Item(A1), other], aorta_lean_run=True)
    assert (lean["kind"], lean["sample"]) == (blocks.LEAN, True)  # a lean run is a sample whatever it holds


# ------------------------------------------------------------------------------------------ state
def test_say_to_writes_each_line_to_the_terminal_and_nothing_without_one():
    lines: list[str] = []
    tr = SimpleNamespace(write_line=lines.append)
    plugins = {"terminalreporter": tr}
    c = SimpleNamespace(pluginmanager=SimpleNamespace(get_plugin=plugins.get))
    state.say_to(c)("one")
    state.say_to(c)("two")
    assert lines == ["one", "two"]
    state.say_to(SimpleNamespace(pluginmanager=SimpleNamespace(get_plugin={}.get)))("lost")
    assert lines == ["one", "two"]


def test_baseline_label_names_the_baseline_and_its_file():
    p = Path("/b/m/nightly.json")
    assert state.baseline_label({"aorta_baseline": {"name": "nightly"}}, p) == "nightly (/b/m/nightly.json)"
    assert state.baseline_label({"aorta_baseline": {}}, p) == "/b/m/nightly.json"
    assert state.baseline_label({"aorta_baseline": None}, p) == "/b/m/nightly.json"
    assert state.baseline_label({}, p) == "/b/m/nightly.json"


def test_a_new_state_holds_nothing_and_its_own_lists():
    t0 = time.monotonic()
    a, b = state.GateState(), state.GateState()
    assert (a.baseline, a.baseline_path, a.runs_dir, a.json_target, a.auto, a.comparison) == (None,) * 6
    assert (a.children, a.lines) == ([], []) and t0 <= a.started <= time.monotonic()
    a.lines.append("x")
    a.children.append("run")
    assert (b.lines, b.children) == ([], [])


# ------------------------------------------------------------------------------------------ wall_record
def report(nodeid: str, duration) -> SimpleNamespace:
    return SimpleNamespace(nodeid=nodeid, duration=duration)


def test_the_recorder_counts_collection_every_test_and_the_checks_apart():
    rec = wall_record.WallRecorder(config=None)
    session = SimpleNamespace(items=[Item(A1), Item("a.py::check", fixtures=("tmp_path",))])
    times = iter([10.0, 12.25])
    wall_record.time.perf_counter, real = (lambda: next(times)), wall_record.time.perf_counter
    try:
        gen = rec.pytest_collection(session)
        next(gen)
        with pytest.raises(StopIteration) as stop:
            gen.send("collected")
        assert stop.value.value == "collected"
    finally:
        wall_record.time.perf_counter = real
    assert (rec.collect_s, rec.bench) == (2.25, {A1})
    for r in (report(A1, 1.5), report("a.py::check", 0.25), report(A1, 0.5), report("a.py::check", None)):
        rec.pytest_runtest_logreport(r)
    assert (rec.tests_s, rec.checks_s) == (2.25, 0.25)


def test_the_collection_time_is_kept_when_collection_fails():
    rec = wall_record.WallRecorder(config=None)
    gen = rec.pytest_collection(SimpleNamespace(items=[Item(B1)]))
    next(gen)
    with pytest.raises(RuntimeError):
        gen.throw(RuntimeError("collection broke"))
    assert rec.bench == {B1} and rec.collect_s >= 0.0


def test_the_record_adds_timed_rounds_by_runner_and_lean_skips_with_the_checks():
    rec = wall_record.WallRecorder(config=None)
    rec.tests_s, rec.checks_s, rec.collect_s = 10.12345, 1.5, 0.3333
    benchmarks = [
        {"extra_info": {"timed_s": 2.0, "reference_timed_s": 0.5, "lean_skips_s": 1.0}},  # hw queue runner
        {"extra_info": {"timed_s": 1.0}},  # no reference run read
        # the FSDP suite's phases: the timed ones only (steps), the warm-up and setup not
        {
            "extra_info": {
                "host_phase_s": {"timed_steps": 3.0, "first_step": 100.0, "setup": 50.0},
                "lean_skips_s": 0.25,
            }
        },
        {"extra_info": None},
        {},
        {"extra_info": {"timed_s": float("nan"), "lean_skips_s": "x"}},  # not numbers: nothing
    ]
    assert rec.record(benchmarks) == {
        "tests_s": 10.123,
        "timed_s": 6.5,
        "collect_s": 0.333,
        "lean_skips_s": 2.75,
    }


def test_a_number_is_a_finite_int_or_float_else_0():
    assert [wall_record._num(v) for v in (2, 1.5, float("nan"), None, "3", True)] == [
        2.0,
        1.5,
        0.0,
        0.0,
        0.0,
        1.0,
    ]


def test_record_asks_the_registered_recorder_and_none_without_one():
    rec = wall_record.WallRecorder(config=None)
    rec.tests_s = 4.0
    plugins = {"aorta-wall-record": rec}
    c = SimpleNamespace(pluginmanager=SimpleNamespace(get_plugin=plugins.get))
    assert wall_record.record(c, [{"extra_info": {"timed_s": 1.0}}])["timed_s"] == 1.0
    assert wall_record.record(c, [])["tests_s"] == 4.0
    other = {"aorta-wall-record": object()}
    assert (
        wall_record.record(SimpleNamespace(pluginmanager=SimpleNamespace(get_plugin=other.get)), []) is None
    )


def test_the_lean_mode_fixture_is_the_one_aorta_plugin_gives_its_workloads():
    import aorta.plugin

    assert state.LEAN_MODE_FIXTURE == "hw_queue" and callable(getattr(aorta.plugin, state.LEAN_MODE_FIXTURE))


def test_a_config_without_the_lean_option_is_a_full_run():
    items = [Item("a.py::known", marks=[CHECK_RUN_ONLY]), Item(A1)]
    c = Config(aorta_only_file=None, aorta_order_seed=0)  # the gate's lean option not declared
    selection.select_items(c, items)
    assert (ids(items), c.deselected) == (["a.py::known", A1], [])
    selection.record_block(SimpleNamespace(config=c, items=items))
    assert (c.stash[state.RUN_BLOCK]["kind"], c.stash[state.RUN_BLOCK]["sample"]) == (blocks.FULL, False)


def test_a_recorder_before_collection_counts_nothing_and_every_test_as_a_check():
    rec = wall_record.WallRecorder(config=None)
    assert rec.record([]) == {"tests_s": 0.0, "timed_s": 0.0, "collect_s": 0.0, "lean_skips_s": 0.0}
    rec.pytest_runtest_logreport(report(A1, 0.5))  # no collection seen: no benchmark known
    rec.pytest_runtest_logreport(SimpleNamespace(nodeid=A1))  # a report without a duration: 0 s
    assert (rec.tests_s, rec.checks_s) == (0.5, 0.5)


def test_the_record_rounds_to_the_millisecond():
    rec = wall_record.WallRecorder(config=None)
    rec.checks_s = 0.00049
    benchmarks = [{"extra_info": {"timed_s": 1.23456, "lean_skips_s": 0.0004}}]
    assert rec.record(benchmarks) == {
        "tests_s": 0.0,
        "timed_s": 1.235,
        "collect_s": 0.0,
        "lean_skips_s": 0.001,
    }
