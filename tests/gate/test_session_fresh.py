"""The gate's runs in fresh processes (``aorta.gate.session.fresh``), in this process: the process starter
(``fresh_runs.run_child`` / ``run_children``) and the compare faked, the documents real. Which runs start with
which seed, label, selection and only-file; which documents a look and the candidate are made of (the check
run's entries, not its samples); the confirmation runs' count, seeds and suspects; where the wall went."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from gate_options import gate_options
from test_gate_offline import bench, multi, run

from aorta.gate.baselines import baseline as bl
from aorta.gate.comparison.compare import GateSettings
from aorta.gate.runs import blocks, fresh_runs, run_wall
from aorta.gate.session import auto_runs, fresh
from aorta.gate.session.options import AUTO_RUNS, GateOptions
from aorta.gate.session.state import GATE_OPTIONS, GATE_STATE, GateState
from aorta.gate.stats import sequential
from aorta.gate.stats.sequential import LOOKS

ARGS = ("benchmarks/", "--aorta-compare=main")


def options(tmp_path: Path, **kw) -> GateOptions:
    return gate_options(tmp_path, **{"runs": 3, **kw})


class Config:
    def __init__(self, tmp_path: Path, **opts) -> None:
        self.lines: list[str] = []
        tr = SimpleNamespace(write_line=self.lines.append)
        self.pluginmanager = SimpleNamespace(get_plugin={"terminalreporter": tr}.get)
        self.invocation_params = SimpleNamespace(args=ARGS, dir=tmp_path)
        self.option = SimpleNamespace(collectonly=opts.pop("collectonly", False))
        self.opts, self.stash = opts, {}

    def getoption(self, name, default=None):
        return self.opts.get(name, default)


def child(
    tmp_path: Path, name: str, doc: dict | None, *, label=None, code=0, wall=10.0, lean=True, sample=True
):
    path = tmp_path / f"{name}.json"
    if doc is not None:
        path.write_text(json.dumps(doc))
    return fresh_runs.ChildRun(
        label or name, code, path, tmp_path / f"{name}.log", wall, lean=lean, sample=sample
    )


def one(name: str, ms: float, seed: int, block: dict | None = None) -> dict:
    doc = run([bench(name, ms, seed=seed)])
    if block is not None:
        doc[blocks.RUN_KEY] = block
    return doc


def lean_block(seed: int) -> dict:
    return blocks.run_block(seed, blocks.LEAN, "sel", sample=True)


# ------------------------------------------------------------------------------------------ seeds, lines
def test_run_k_takes_the_baselines_kth_block_seed_then_its_blocks_again_in_turn():
    assert [fresh.block_seed([7, 3, 9], k) for k in range(1, 8)] == [7, 3, 9, 7, 3, 9, 7]
    assert [fresh.block_seed([], k) for k in (1, 2, 5)] == [1, 2, 5]  # no blocks: k itself


def test_the_time_line_sums_runs_then_confirmations_each_listed(tmp_path):
    kids = [
        child(tmp_path, "a", None, label="run 1/2", wall=10.4),
        child(tmp_path, "b", None, label="confirm 1/1", wall=4.6),
        child(tmp_path, "c", None, label="run 2/2", wall=20.6),
        child(tmp_path, "d", None, label="running", wall=99.0),  # no kind of its own
    ]
    assert fresh.time_line(kids) == (
        "aorta gate: time: 2 run process(es) 31 s (10, 21); 1 confirm process(es) 5 s (5)"
    )
    assert fresh.time_line(kids[:1]) == "aorta gate: time: 1 run process(es) 10 s (10)"
    assert fresh.time_line([]) == "aorta gate: time: "


def test_the_wall_report_names_each_run_by_kind(tmp_path, monkeypatch):
    check = child(tmp_path, "check", None, label="check run", lean=False, wall=30.0)
    kids = [
        check,
        child(tmp_path, "r1", None, label="run 1/auto", wall=10.0),
        child(tmp_path, "r2", None, label="run 2/3", lean=False, wall=20.0),
        child(tmp_path, "c1", None, label="confirm 1/2", lean=True, wall=5.0),
    ]
    state = GateState(children=kids, auto=auto_runs.AutoOutcome(check=check), started=100.0)
    monkeypatch.setattr(fresh.time, "monotonic", lambda: 200.0)
    report = fresh.wall_report(state)
    assert [(r.kind, r.wall_s, r.known) for r in report.runs] == [
        ("check", 30.0, False),
        ("lean", 10.0, False),
        ("full", 20.0, False),
        ("confirm", 5.0, False),
    ]
    assert report.total_s == 100.0
    state.auto = None  # not auto: the first run is a run like the others
    assert [r.kind for r in fresh.wall_report(state).runs] == ["full", "lean", "full", "confirm"]
    assert fresh.wall_report(GateState()) is None


def test_the_wall_report_reads_each_runs_record(tmp_path):
    doc = {run_wall.WALL_KEY: {"tests_s": 6.0, "timed_s": 4.0, "collect_s": 1.0, "lean_skips_s": 0.0}}
    state = GateState(children=[child(tmp_path, "r1", doc, label="run 1/3", wall=8.0)])
    (r,) = fresh.wall_report(state).runs
    assert (r.kind, r.known, r.wall_s) == ("lean", True, 8.0)


# ------------------------------------------------------------------------------------------ documents
def test_a_looks_documents_are_the_sample_runs_in_order_and_the_check_run_apart(tmp_path):
    full = [child(tmp_path, "f1", one("a", 10.0, 1)), child(tmp_path, "f2", one("a", 11.0, 2))]
    rest = [child(tmp_path, "r1", one("a", 12.0, 3))]
    check = child(tmp_path, "check", one("k", 5.0, 4), lean=False, sample=False)
    docs, ids, lead = fresh.auto_docs(full, rest, check)
    assert ids == ["run1", "run2", "run3"]
    assert [d["benchmarks"][0]["stats"]["median"] for d in docs] == [
        json.loads(c.json_path.read_text())["benchmarks"][0]["stats"]["median"] for c in [*full, *rest]
    ]
    assert lead["benchmarks"][0]["name"] == "k"
    assert fresh.auto_docs(full, [], full[0])[2] is None  # a check run that is a sample is no lead
    assert fresh.auto_docs(full, [], None)[2] is None


def test_an_auto_comparison_judges_every_sample_with_the_check_runs_entries(tmp_path, monkeypatch):
    seen = {}

    def compare_runs(ref, cand, settings, *, ref_label, cand_label):
        seen.update(ref=ref, cand=cand, settings=settings, ref_label=ref_label, cand_label=cand_label)
        return "the comparison"

    monkeypatch.setattr(fresh, "compare_runs", compare_runs)
    base = multi("a", [10.0, 10.1], seed=1)
    base["aorta_baseline"] = {"name": "main"}
    check = child(tmp_path, "check", one("k", 5.0, 4), lean=False, sample=False)
    state = GateState(
        baseline=base, baseline_path=tmp_path / "main.json", auto=auto_runs.AutoOutcome(check=check)
    )
    full = [child(tmp_path, "f1", one("a", 10.0, 1))]
    rest = [child(tmp_path, "r1", one("a", 12.0, 3))]
    opts = options(tmp_path, settings=GateSettings(alpha=0.02))
    assert fresh.auto_comparison(opts, state, full, rest) == "the comparison"
    # the baseline's runs, read once for the session (GateState.baseline_runs), of the baseline's document
    assert seen["ref"] is state.baseline_runs() and seen["ref"].doc is base
    assert seen["settings"] == GateSettings(alpha=0.02)
    assert (seen["ref_label"], seen["cand_label"]) == (
        f"main ({tmp_path / 'main.json'})",
        "this run (2 fresh processes, auto)",
    )
    assert [e["id"] for e in seen["cand"]["aorta_runs"]] == ["run1", "run2"]
    assert sorted(b["name"] for b in seen["cand"]["benchmarks"]) == ["a", "k"]  # the check run's entry joins
    seen.clear()
    assert fresh.auto_comparison(opts, state, [], []) is None and seen == {}  # no run yet
    assert fresh.auto_comparison(opts, GateState(), full, rest) is None  # nothing to compare with
    fresh.auto_comparison(opts, GateState(baseline=base), full, [])
    assert [b["name"] for b in seen["cand"]["benchmarks"]] == ["a"]  # no check run known: no lead


def test_the_candidate_of_one_process_is_its_own_run(tmp_path, monkeypatch):
    monkeypatch.setattr("aorta.record.benchmark_json.session_document", lambda config: {"mine": config})
    c = Config(tmp_path)
    assert fresh.candidate(c, options(tmp_path, runs=1), GateState()) == {"mine": c}


def test_the_candidate_of_fixed_runs_is_every_run_combined(tmp_path):
    kids = [child(tmp_path, f"r{k}", one("a", 10.0 + k, k)) for k in (1, 2)]
    doc = fresh.candidate(Config(tmp_path), options(tmp_path, runs=2), GateState(children=kids))
    assert [e["id"] for e in doc["aorta_runs"]] == ["run1", "run2"] and blocks.LOOKS_KEY not in doc


def test_no_candidate_without_runs_or_with_a_failed_one(tmp_path):
    ok = child(tmp_path, "r1", one("a", 10.0, 1))
    failed = child(tmp_path, "r2", one("a", 10.0, 2), code=1)
    unwritten = child(tmp_path, "r3", None)
    for kids in ([], [ok, failed], [unwritten, ok]):
        assert fresh.candidate(Config(tmp_path), options(tmp_path), GateState(children=kids)) is None


def test_the_auto_candidate_holds_the_samples_the_check_runs_entries_and_its_looks(tmp_path):
    check = child(tmp_path, "check", one("k", 5.0, 9), lean=False, sample=False)
    full = [child(tmp_path, "f1", one("a", 10.0, 1))]
    rest = [child(tmp_path, "r1", one("a", 11.0, 2))]
    outcome = auto_runs.AutoOutcome(full=full, restricted=rest, check=check)
    opts = options(tmp_path, runs=AUTO_RUNS, settings=GateSettings(looks=len(LOOKS)))
    doc = fresh.candidate(Config(tmp_path), opts, GateState(children=outcome.children, auto=outcome))
    assert [e["id"] for e in doc["aorta_runs"]] == ["run1", "run2"]
    assert sorted(b["name"] for b in doc["benchmarks"]) == ["a", "k"]
    assert doc[blocks.LOOKS_KEY] == {"looks": len(LOOKS)}
    only_check = auto_runs.AutoOutcome(check=check)
    assert fresh.candidate(Config(tmp_path), opts, GateState(children=[check], auto=only_check)) is None


# ------------------------------------------------------------------------------------------ confirmations
class Comp:
    def __init__(self, suspects) -> None:
        self._suspects = suspects

    def suspects(self):
        return list(self._suspects)


def test_suspects_get_confirm_runs_seeded_after_the_runs_lean_and_only_them(tmp_path, monkeypatch):
    calls = []
    done = [
        child(tmp_path, "c1", one("a", 10.0, 1), label="confirm 1/2"),
        child(tmp_path, "c2", None, label="confirm 2/2", code=1),
    ]

    def run_children(args, **kw):
        calls.append((args, kw))
        return done

    monkeypatch.setattr(fresh.fresh_runs, "run_children", run_children)
    monkeypatch.delenv("RANK", raising=False)
    c = Config(tmp_path)
    earlier = child(tmp_path, "r1", None, label="run 1/4")
    state = GateState(runs_dir=tmp_path, children=[earlier])
    docs = fresh.confirm_suspects(c, options(tmp_path, confirm=2, runs=4), state, Comp(["x::a", "x::b"]))
    ((args, kw),) = calls
    assert args == ARGS
    assert {k: v for k, v in kw.items() if k != "say"} == dict(
        cwd=tmp_path,
        out_dir=tmp_path,
        count=2,
        kind="confirm",
        first_seed=5,
        only=["x::a", "x::b"],
        lean=True,
    )
    assert [d["benchmarks"][0]["name"] for d in docs] == ["a"]  # the failed one's document is not read
    assert state.children == [earlier, *done]
    assert c.lines == ["aorta gate: 2 suspected regression(s): 2 confirmation run(s) of them"]
    kw["say"]("from the runs")
    assert c.lines[-1] == "from the runs"


def test_no_confirmation_without_suspects_a_count_or_on_another_rank(tmp_path, monkeypatch):
    monkeypatch.setattr(fresh.fresh_runs, "run_children", lambda *a, **k: pytest.fail("no run should start"))
    monkeypatch.delenv("RANK", raising=False)
    state = GateState()
    assert fresh.confirm_suspects(Config(tmp_path), options(tmp_path, confirm=2), state, Comp([])) == []
    assert fresh.confirm_suspects(Config(tmp_path), options(tmp_path, confirm=0), state, Comp(["x::a"])) == []
    monkeypatch.setenv("RANK", "1")
    assert fresh.confirm_suspects(Config(tmp_path), options(tmp_path, confirm=2), state, Comp(["x::a"])) == []
    assert state.runs_dir is None and state.children == []


def test_confirmations_of_a_gate_that_ran_here_get_a_runs_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(fresh.fresh_runs, "run_children", lambda args, **kw: [])
    monkeypatch.delenv("RANK", raising=False)
    state = GateState()
    assert (
        fresh.confirm_suspects(Config(tmp_path), options(tmp_path, confirm=1, runs=1), state, Comp(["x::a"]))
        == []
    )
    assert state.runs_dir.parent == tmp_path / "runs" and state.runs_dir.is_dir()


# ------------------------------------------------------------------------------------------ the runs
class Starts:
    """``fresh_runs.run_child`` faked: each start recorded, each run's document the next of ``docs``."""

    def __init__(self, tmp_path: Path, docs, fail_at: int | None = None) -> None:
        self.tmp_path, self.docs, self.calls, self.fail_at = tmp_path, list(docs), [], fail_at

    def __call__(self, args, **kw):
        assert args == ARGS, "each run is the gate's own command"
        self.calls.append(kw)
        k = len(self.calls) - 1
        only = kw["only_file"].read_text().split() if kw["only_file"] is not None else None
        kw["read_only"] = only
        doc = self.docs[k] if k < len(self.docs) else self.docs[-1]
        return child(
            self.tmp_path,
            kw["name"],
            doc,
            label=kw["label"],
            code=1 if k == self.fail_at else 0,
            lean=kw["lean"],
            sample=k > 0,
        )


def gate(tmp_path, monkeypatch, opts, baseline, docs, **kw):
    starts = Starts(tmp_path, docs, **kw)
    monkeypatch.setattr(fresh.fresh_runs, "run_child", starts)
    c = Config(tmp_path)
    state = GateState(baseline=baseline, baseline_path=tmp_path / "main.json", runs_dir=tmp_path)
    return starts, c, state, fresh.run_auto_gate(c, opts, state)


def test_fixed_runs_against_blocks_take_the_check_run_then_the_blocks_seeds(tmp_path, monkeypatch):
    base = bl.combine_runs([one("a", 10.0, 1, lean_block(5)), one("a", 10.1, 2, lean_block(8))], ["b1", "b2"])
    starts, c, state, out = gate(
        tmp_path, monkeypatch, options(tmp_path, runs=3), base, [one("a", 10.0, k) for k in range(5)]
    )
    got = [(s["name"], s["label"], s["seed"], s["lean"], s["only_file"]) for s in starts.calls]
    assert got == [
        ("check", "check run", 0, False, None),
        ("run1", "run 1/3", 5, True, None),
        ("run2", "run 2/3", 8, True, None),
        ("run3", "run 3/3", 5, True, None),  # past the baseline's blocks: its first again
    ]
    assert all(s["cwd"] == tmp_path and s["out_dir"] == tmp_path for s in starts.calls)
    starts.calls[1]["say"]("a child's line")
    assert c.lines == ["a child's line"]  # each run's lines go to the terminal
    c.lines.clear()
    assert (len(out.full), out.comparison, out.stop_reason) == (3, None, "the cap of 3 runs")
    assert c.lines == []  # a fixed N plans nothing and judges nothing


def test_fixed_runs_without_blocks_take_seeds_1_to_n(tmp_path, monkeypatch):
    base = multi("a", [10.0, 10.1])
    starts, c, state, out = gate(
        tmp_path, monkeypatch, options(tmp_path, runs=2), base, [one("a", 10.0, k) for k in range(5)]
    )
    assert [s["seed"] for s in starts.calls] == [0, 1, 2]
    starts, c, state, out = gate(
        tmp_path,
        monkeypatch,
        options(tmp_path, runs=2, compare_ref=None, save_name="nb"),
        None,
        [one("a", 10.0, k) for k in range(5)],
    )
    assert [s["seed"] for s in starts.calls] == [0, 1, 2]  # saving: no baseline, no blocks


def test_an_auto_gate_judges_its_looks_and_says_each_line(tmp_path, monkeypatch):
    base = bl.combine_runs([one("a", 10.0, k, lean_block(10 + k)) for k in range(3)], ["b1", "b2", "b3"])
    opts = options(tmp_path, runs=AUTO_RUNS, settings=GateSettings(looks=len(LOOKS)), budget_s=1e6)
    docs = [one("a", 10.0 + 0.01 * k, 20 + k, lean_block(10 + (k - 1) % 3)) for k in range(20)]
    starts, c, state, out = gate(tmp_path, monkeypatch, opts, base, docs)
    labels = [s["label"] for s in starts.calls]
    assert labels[:3] == ["check run", "run 1/auto", "run 2/auto"]
    assert [s["seed"] for s in starts.calls[:5]] == [0, 10, 11, 12, 10]
    assert out.comparison is not None and out.looks  # judged at its looks
    said = [line for line in c.lines]
    assert said[0].startswith("aorta gate: check run 10 s (not a sample); repeat runs planned at 5 s each")
    assert said[-len(out.looks) :] == [f"aorta gate: {line}" for line in out.looks]
    assert all(s["only_file"] is None for s in starts.calls)  # paired with blocks: never restricted


def test_an_auto_gate_without_blocks_restricts_its_runs_to_the_undecided_in_only_files(tmp_path, monkeypatch):
    base = bl.combine_runs(
        [run([bench("a", 10.0, seed=k), bench("b", 20.0, seed=50 + k)]) for k in range(3)], ["b1", "b2", "b3"]
    )
    # a: 30% slower from the first look (decided); b: 2% and -1% in turn, undecided at the first look
    docs = [
        run([bench("a", 13.0, seed=100 + k), bench("b", 20.0 * (1.02 if k % 2 else 0.99), seed=200 + k)])
        for k in range(20)
    ]
    opts = options(tmp_path, runs=AUTO_RUNS, settings=GateSettings(looks=len(LOOKS)), budget_s=1e6)
    starts, c, state, out = gate(tmp_path, monkeypatch, opts, base, docs)
    restricted = [s for s in starts.calls if s["only_file"] is not None]
    assert restricted, (out.looks, out.stop_reason)
    assert {tuple(s["read_only"]) for s in restricted} == {("benchmarks/hw_queue/test_x.py::b",)}
    assert restricted[0]["label"].endswith(" (1 undecided benchmark(s))")
    # one file a selection, numbered by the selections seen (look0: every benchmark, written as none)
    assert {s["only_file"] for s in restricted} == {tmp_path / "look1-only.txt"}
    assert (tmp_path / "look0-only.txt").exists() is False


def test_saving_with_auto_runs_to_the_budget_and_judges_nothing(tmp_path, monkeypatch):
    opts = options(tmp_path, runs=AUTO_RUNS, compare_ref=None, save_name="nb", budget_s=1e6)
    starts, c, state, out = gate(tmp_path, monkeypatch, opts, None, [one("a", 10.0, k) for k in range(30)])
    assert out.comparison is None and out.stop_reason.startswith("the cap of ")
    assert starts.calls[1]["label"] == "run 1/auto"
    assert c.lines[0].startswith("aorta gate: check run ")


# ------------------------------------------------------------------------------------------ the hook
def session(tmp_path, opts, state, items=("x",), **config_kw):
    c = Config(tmp_path, **config_kw)
    if opts is not None:
        c.stash[GATE_OPTIONS] = opts
    if state is not None:
        c.stash[GATE_STATE] = state
    c.stash = _Stash(c.stash)
    return SimpleNamespace(config=c, items=list(items))


class _Stash(dict):
    def get(self, key, default=None):
        return super().get(key, default)


def test_the_hook_runs_here_when_not_orchestrating_or_nothing_is_collected(tmp_path):
    state = GateState()
    assert fresh.run_in_fresh_processes(session(tmp_path, None, state)) is None
    assert fresh.run_in_fresh_processes(session(tmp_path, options(tmp_path), None)) is None
    assert fresh.run_in_fresh_processes(session(tmp_path, options(tmp_path, runs=1), state)) is None
    assert fresh.run_in_fresh_processes(session(tmp_path, options(tmp_path), state, collectonly=True)) is None
    assert fresh.run_in_fresh_processes(session(tmp_path, options(tmp_path), state, items=())) is None
    assert state.runs_dir is None


def test_plain_runs_start_n_children_and_the_json_moves_to_the_gate(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(
        fresh.fresh_runs, "run_children", lambda args, **kw: calls.append((args, kw)) or ["kids"]
    )
    s = session(tmp_path, options(tmp_path, runs=4, compare_ref=None), state := GateState())
    s.config._benchmarksession = SimpleNamespace(json="/out/bench.json")
    assert fresh.run_in_fresh_processes(s) is True
    assert (state.json_target, s.config._benchmarksession.json) == ("/out/bench.json", None)
    ((args, kw),) = calls
    assert (args, kw["cwd"], kw["out_dir"], kw["count"]) == (ARGS, tmp_path, state.runs_dir, 4)
    assert state.runs_dir.parent == tmp_path / "runs" and state.children == ["kids"] and state.auto is None
    kw["say"]("run 1/4 started")
    assert s.config.lines == ["run 1/4 started"]  # the children's lines go to the terminal


def test_a_benchmark_session_without_a_json_target_keeps_none(tmp_path, monkeypatch):
    monkeypatch.setattr(fresh.fresh_runs, "run_children", lambda args, **kw: [])
    for i, bs in enumerate((SimpleNamespace(), SimpleNamespace(json=None), None)):
        s = session(
            tmp_path, options(tmp_path, runs=2, compare_ref=None, runs_root=tmp_path / str(i)), GateState()
        )
        if bs is not None:
            s.config._benchmarksession = bs
        assert fresh.run_in_fresh_processes(s) is True
        assert s.config.stash[GATE_STATE].json_target is None
        assert getattr(bs, "json", None) is None


def test_a_gates_runs_go_through_the_auto_loop(tmp_path, monkeypatch):
    kids = [child(tmp_path, "check", None)]
    outcome = auto_runs.AutoOutcome(check=kids[0])
    seen = []

    def run_auto_gate(config, opts, state):
        assert (
            config is s.config
            and opts is s.config.stash[GATE_OPTIONS]
            and state is s.config.stash[GATE_STATE]
        )
        seen.append(state.runs_dir)
        return outcome

    monkeypatch.setattr(fresh, "run_auto_gate", run_auto_gate)
    monkeypatch.setattr(fresh.fresh_runs, "run_children", lambda *a, **k: pytest.fail("not the plain runs"))
    for i, kw in enumerate(
        ({"runs": 3}, {"runs": AUTO_RUNS}, {"runs": 2, "compare_ref": None, "save_name": "nb"})
    ):
        state = GateState()
        s = session(tmp_path, options(tmp_path, runs_root=tmp_path / str(i), **kw), state)
        assert fresh.run_in_fresh_processes(s) is True
        assert (state.auto, state.children, seen[-1]) == (outcome, kids, state.runs_dir)
        assert state.json_target is None


# ------------------------------------------------------------------------------------------ the json
def test_the_combined_runs_go_to_the_benchmark_json_whole_path(tmp_path):
    target = tmp_path / "sub" / "bench.json"
    target.parent.mkdir()
    state = GateState(json_target=str(target))
    run_doc = {"benchmarks": [], "aorta_runs": [{"id": "run1"}, {"id": "run2"}]}
    fresh.write_combined(Config(tmp_path), run_doc, state)
    assert json.loads(target.read_text()) == run_doc
    assert state.lines == [f"aorta gate: the 2 runs as one document: {target}"]
    nothing = GateState()
    fresh.write_combined(Config(tmp_path), run_doc, nothing)
    assert nothing.lines == []
    fresh.write_combined(Config(tmp_path), {"benchmarks": []}, state)
    assert state.lines[-1] == f"aorta gate: the 0 runs as one document: {target}"


def test_bench_dicts_are_the_benchmarks_without_an_error_from_start(tmp_path):
    def b(name, err=False):
        return SimpleNamespace(
            has_error=err, as_dict=lambda include_data: {"name": name, "data": include_data}
        )

    c = Config(tmp_path)
    assert fresh.bench_dicts(c) == []
    c._benchmarksession = SimpleNamespace(benchmarks=[b("a"), b("b", err=True), b("c"), b("d")])
    assert fresh.bench_dicts(c) == [{"name": n, "data": True} for n in ("a", "c", "d")]
    assert fresh.bench_dicts(c, start=2) == [{"name": n, "data": True} for n in ("c", "d")]


def test_the_first_repeat_run_is_planned_at_the_check_runs_lean_estimate_and_says_so(tmp_path):
    (tmp_path / "r.json").write_text("{}")

    def run_of(wall_s: float, **kw) -> fresh_runs.ChildRun:
        return fresh_runs.ChildRun("run", 0, tmp_path / "r.json", tmp_path / "r.log", wall_s, **kw)

    check = run_of(40.0, lean=False, sample=False, lean_estimate_s=12.0)
    lines: list[str] = []
    budget = sequential.Budget(100.0, max_runs=3)
    auto_runs.run_auto(
        lambda k, only, lean: check if k == 0 else run_of(12.0, lean=True),
        budget,
        say=lines.append,
        clock=lambda: 0.0,
    )
    assert lines == [
        "check run 40 s (not a sample); repeat runs planned at 12 s each (the check run less the checks and "
        "passes a repeat run skips) until one is measured: the budget holds about 3 more"
    ]
    lines.clear()
    no_estimate = run_of(40.0, lean=False, sample=False)
    auto_runs.run_auto(
        lambda k, only, lean: no_estimate if k == 0 else run_of(12.0, lean=True),
        budget,
        say=lines.append,
        clock=lambda: 0.0,
    )
    assert lines == [
        "check run 40 s (not a sample); repeat runs planned at 20 s each until one is measured: the budget holds "
        "about 3 more"
    ]
