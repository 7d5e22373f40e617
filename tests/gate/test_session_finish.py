"""The end of a gate (``aorta.gate.session.finish``), in this process: the candidate judged against the
baseline (real compares of known runs), suspects confirmed, the verdict files written, the run saved, and the
exit code: the gate's where pytest's own is 0, pytest's otherwise. A failed run, a run that timed nothing and
a run with nothing to judge each say why and take their own code."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from gate_options import gate_options
from test_gate_offline import BASE, SLOW, bench, multi, run

from aorta.exit_codes import EXIT_NOT_SAVED, EXIT_NOTHING_COMPARED, EXIT_REGRESSION
from aorta.gate.baselines import baseline as bl
from aorta.gate.comparison.compare import GateSettings, Threshold
from aorta.gate.runs import blocks, fresh_runs
from aorta.gate.session import auto_runs, finish
from aorta.gate.session.options import GateOptions
from aorta.gate.session.state import GATE_OPTIONS, GATE_STATE, GateState

AGAIN = [10.02, 9.98, 10.0]


def options(tmp_path: Path, **kw) -> GateOptions:
    return gate_options(tmp_path, **kw)


class Stash(dict):
    def get(self, key, default=None):
        return super().get(key, default)


class Session:
    def __init__(self, tmp_path: Path, opts, state, verbose: int = 0, disabled: bool = False) -> None:
        self.exitstatus = 0
        c = SimpleNamespace(
            stash=Stash({GATE_OPTIONS: opts, GATE_STATE: state}),
            getoption=lambda name, default=None: {"verbose": verbose}.get(name, default),
            hook=SimpleNamespace(pytest_aorta_options=self.aorta_options),
            pluginmanager=SimpleNamespace(get_plugin=lambda name: None),
            invocation_params=SimpleNamespace(args=(), dir=tmp_path),
            _benchmarksession=SimpleNamespace(disabled=disabled),
        )
        self.config = c

    def aorta_options(self, config):
        assert config is self.config, "the hook is asked about this run's config"
        return SimpleNamespace(rounds=5, device="cuda")


def child(tmp_path: Path, name: str, doc: dict | None, *, code: int = 0, label: str | None = None):
    path = tmp_path / f"{name}.json"
    if doc is not None:
        path.write_text(json.dumps(doc))
    return fresh_runs.ChildRun(
        label or name, code, path, tmp_path / f"{name}.log", 10.0, ended=f"exit {code}"
    )


@pytest.fixture(autouse=True)
def rank_0(monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(name, raising=False)


def here(monkeypatch, doc: dict | None) -> None:
    """This process's own run (``--aorta-runs 1``): ``doc``."""

    def candidate(config, opts, state):
        assert config.stash[GATE_OPTIONS] is opts and config.stash[GATE_STATE] is state
        return doc

    monkeypatch.setattr(finish, "candidate", candidate)


def finished(tmp_path, opts, state, exitstatus: int = 0, **kw) -> Session:
    s = Session(tmp_path, opts, state, **kw)
    finish.finish_gate(s, exitstatus)
    return s


# ------------------------------------------------------------------------------------------ no gate
def test_no_gate_state_does_nothing(tmp_path):
    s = Session(tmp_path, None, GateState())
    finish.finish_gate(s, 0)
    s = Session(tmp_path, options(tmp_path), None)
    finish.finish_gate(s, 3)
    assert s.exitstatus == 0


def test_plain_runs_a_failed_run_gives_its_code_and_says_where_its_output_is(tmp_path):
    ok, bad = child(tmp_path, "r1", run([])), child(tmp_path, "r2", None, code=7, label="run 2/3")
    state = GateState(children=[ok, bad])
    s = finished(tmp_path, options(tmp_path, compare_ref=None, runs=3), state)
    assert s.exitstatus == 7
    assert state.lines == [f"aorta gate: run 2/3 failed (exit 7); its output: {bad.log_path}"]
    state = GateState(children=[ok, bad])
    assert (
        finished(tmp_path, options(tmp_path, compare_ref=None, runs=3), state, exitstatus=2).exitstatus == 0
    )


def test_plain_runs_all_passed_are_written_as_one_document(tmp_path, monkeypatch):
    written = []
    kids = [child(tmp_path, f"r{k}", run([bench("a", 10.0, seed=k)])) for k in (1, 2)]
    state = GateState(children=kids)
    s = Session(tmp_path, options(tmp_path, compare_ref=None, runs=2), state)

    def write_combined(config, doc, to):
        assert config is s.config and to is state
        written.append(doc)

    monkeypatch.setattr(finish, "write_combined", write_combined)
    finish.finish_gate(s, 0)
    assert s.exitstatus == 0 and [e["id"] for e in written[0]["aorta_runs"]] == ["run1", "run2"]
    written.clear()
    finished(tmp_path, options(tmp_path, compare_ref=None, runs=1), GateState(children=kids))
    finished(tmp_path, options(tmp_path, compare_ref=None, runs=2), GateState())
    assert written == []  # one run here, or none started: nothing combined


# ------------------------------------------------------------------------------------------ no verdict
def test_a_run_that_timed_nothing_compares_nothing_and_says_so(tmp_path):
    empty = child(tmp_path, "r1", None, code=0, label="run 1/3")
    state = GateState(children=[empty])
    s = finished(tmp_path, options(tmp_path, runs=3), state)
    assert s.exitstatus == EXIT_NOTHING_COMPARED
    assert state.lines == [
        "aorta gate: NOTHING COMPARED: run 1/3 timed no benchmark (every selected one skipped?), nothing saved; "
        f"its output: {empty.log_path}"
    ]
    saving = finished(
        tmp_path, options(tmp_path, runs=3, compare_ref=None, save_name="nb"), GateState(children=[empty])
    )
    assert saving.exitstatus == EXIT_NOT_SAVED
    assert (
        finished(tmp_path, options(tmp_path, runs=3), GateState(children=[empty]), exitstatus=1).exitstatus
        == 0
    )


def test_a_failed_run_compares_nothing_and_gives_its_code(tmp_path):
    ok, bad = child(tmp_path, "r1", run([])), child(tmp_path, "r2", run([]), code=3, label="run 2/3")
    state = GateState(children=[ok, bad])
    s = finished(tmp_path, options(tmp_path, runs=3), state)
    assert s.exitstatus == 3 and not (tmp_path / "verdict.json").exists()
    assert state.lines == [
        f"aorta gate: run 2/3 failed (exit 3): nothing compared or saved; its output: {bad.log_path}"
    ]
    assert (
        finished(tmp_path, options(tmp_path, runs=3), GateState(children=[bad]), exitstatus=2).exitstatus == 0
    )


@pytest.mark.parametrize(
    "kw, exitstatus, disabled, code, why",
    [
        ({}, 0, False, EXIT_NOTHING_COMPARED, "no benchmark ran in this run"),
        ({"compare_ref": None, "save_name": "nb"}, 0, False, EXIT_NOT_SAVED, "no benchmark ran in this run"),
        ({}, 0, True, EXIT_NOTHING_COMPARED, "benchmarks are disabled in this run"),
        ({}, 5, False, 0, "no test was selected (-k, -m or the paths chose none)"),  # pytest's own 5 stays
    ],
)
def test_no_run_to_judge_says_why(tmp_path, monkeypatch, kw, exitstatus, disabled, code, why):
    here(monkeypatch, None)
    state = GateState()
    s = finished(tmp_path, options(tmp_path, **kw), state, exitstatus=exitstatus, disabled=disabled)
    assert s.exitstatus == code
    assert len(state.lines) == 1 and state.lines[0].startswith(f"aorta gate: NOTHING COMPARED: {why}")
    assert state.lines[0].endswith(", nothing saved")


# ------------------------------------------------------------------------------------------ the verdict
def test_a_slower_run_here_is_a_regression_written_to_the_verdict_file(tmp_path, monkeypatch):
    here(monkeypatch, multi("a", SLOW, seed=10))
    state = GateState(baseline=multi("a", BASE), baseline_path=tmp_path / "main.json")
    s = finished(tmp_path, options(tmp_path), state)
    assert s.exitstatus == EXIT_REGRESSION
    comp = state.comparison
    assert [(v.metric, v.outcome) for v in comp.verdicts] == [("device_ms", "SLOWER"), ("tflops", "SLOWER")]
    assert comp.cand_label == "this run" and comp.ref_label == str(tmp_path / "main.json")
    verdict = json.loads((tmp_path / "verdict.json").read_text())
    assert (verdict["exit_code"], verdict["budget"]) == (EXIT_REGRESSION, None)  # no fresh run: no wall
    assert any(str(tmp_path / "verdict.json") in line for line in state.lines)


def test_a_run_that_failed_tests_keeps_pytests_code(tmp_path, monkeypatch):
    here(monkeypatch, multi("a", SLOW, seed=10))
    state = GateState(baseline=multi("a", BASE), baseline_path=tmp_path / "main.json")
    s = finished(tmp_path, options(tmp_path, confirm=2), state, exitstatus=1)
    assert s.exitstatus == 0  # pytest sets its own 1 itself; no confirmation started after failed tests
    assert state.comparison.exit_code == EXIT_REGRESSION


def test_the_same_code_is_clean_and_the_verdict_file_holds_the_wall(tmp_path, monkeypatch):
    kids = [
        child(tmp_path, f"r{k}", multi("a", [c], seed=10 + k), label=f"run {k + 1}/3")
        for k, c in enumerate(AGAIN)
    ]
    state = GateState(children=kids, baseline=multi("a", BASE), baseline_path=tmp_path / "main.json")
    monkeypatch.setattr(
        finish,
        "wall_report",
        lambda st: SimpleNamespace(as_dict=lambda: {"total_s": 1.0}, lines=lambda who: [f"{who}: wall"]),
    )
    s = finished(tmp_path, options(tmp_path, runs=3), state)
    assert s.exitstatus == 0
    assert state.comparison.cand_label == "this run (3 fresh processes)"
    assert json.loads((tmp_path / "verdict.json").read_text())["budget"] == {"total_s": 1.0}
    assert state.lines[-3:] == [
        f"verdict JSON: {tmp_path / 'verdict.json'}",
        "aorta gate: time: 3 run process(es) 30 s (10, 10, 10)",
        "aorta gate: wall",
    ]


def test_the_verdict_files_are_written_by_rank_0_only(tmp_path, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    here(monkeypatch, multi("a", SLOW, seed=10))
    state = GateState(baseline=multi("a", BASE), baseline_path=tmp_path / "main.json")
    s = finished(tmp_path, options(tmp_path), state)
    assert s.exitstatus == EXIT_REGRESSION and not (tmp_path / "verdict.json").exists()


def test_a_verdict_file_that_cannot_be_written_is_said_and_not_clean(tmp_path, monkeypatch):
    here(monkeypatch, multi("a", AGAIN, seed=10))
    state = GateState(baseline=multi("a", BASE), baseline_path=tmp_path / "main.json")
    (tmp_path / "verdict.json").mkdir()
    s = finished(tmp_path, options(tmp_path), state)
    assert s.exitstatus == int(pytest.ExitCode.USAGE_ERROR)
    assert any(line.startswith("aorta gate: could not write the verdict files: ") for line in state.lines)
    state = GateState(baseline=multi("a", BASE), baseline_path=tmp_path / "main.json")
    here(monkeypatch, multi("a", SLOW, seed=10))
    assert finished(tmp_path, options(tmp_path), state).exitstatus == EXIT_REGRESSION  # the worse code stays


def test_verbose_shows_every_verdict_line(tmp_path, monkeypatch):
    here(monkeypatch, multi("a", AGAIN, seed=10))
    quiet, loud = (GateState(baseline=multi("a", BASE), baseline_path=tmp_path / "m.json") for _ in range(2))
    finished(tmp_path, options(tmp_path), quiet, verbose=0)
    finished(tmp_path, options(tmp_path), loud, verbose=1)
    assert len(loud.lines) > len(quiet.lines)


# ------------------------------------------------------------------------------------------ confirmations
def test_suspects_are_confirmed_and_judged_with_the_extra_runs(tmp_path, monkeypatch):
    here(monkeypatch, multi("a", [10.3, 10.33, 10.28], seed=10))  # 3% slower: SLOWER, a suspect
    calls = []

    def confirm(config, opts, state, comp):
        assert config.stash[GATE_OPTIONS] is opts and config.stash[GATE_STATE] is state
        calls.append(comp.suspects())
        return [
            multi("a", [c], seed=40 + k) for k, c in enumerate([10.0, 10.01])
        ]  # the confirmations: as before

    monkeypatch.setattr(finish, "confirm_suspects", confirm)
    state = GateState(baseline=multi("a", BASE), baseline_path=tmp_path / "main.json", lines=["before"])
    settings = GateSettings(min_effect=0.015)
    s = finished(tmp_path, options(tmp_path, confirm=2, runs=3, settings=settings), state)
    assert calls == [["benchmarks/hw_queue/test_x.py::a"]]
    comp = state.comparison
    assert comp.verdicts[0].cand_runs == 5  # 3 runs and 2 confirmations
    assert (comp.settings, comp.ref_label, comp.cand_label) == (
        settings,
        str(tmp_path / "main.json"),
        "this run (3 fresh processes)",
    )
    assert s.exitstatus == comp.exit_code
    assert state.lines[0] == "before"  # the verdict's lines are added to what the gate said before


def test_the_settings_given_judge_the_run(tmp_path, monkeypatch):
    here(monkeypatch, multi("a", SLOW, seed=10))  # 6% slower: SAME under a 10% minimum effect
    state = GateState(baseline=multi("a", BASE), baseline_path=tmp_path / "main.json")
    s = finished(tmp_path, options(tmp_path, settings=GateSettings(min_effect=0.1)), state)
    assert s.exitstatus == 0 and [v.outcome for v in state.comparison.verdicts] == ["SAME", "SAME"]


def test_a_confirmation_that_exited_0_without_its_json_failed(tmp_path, monkeypatch):
    here(monkeypatch, multi("a", SLOW, seed=10))
    bad = child(tmp_path, "c1", None, code=0, label="confirm 1/2")
    monkeypatch.setattr(
        finish, "confirm_suspects", lambda config, opts, state, comp: state.children.append(bad) or []
    )
    state = GateState(baseline=multi("a", BASE), baseline_path=tmp_path / "main.json")
    s = finished(tmp_path, options(tmp_path, confirm=2), state)
    assert s.exitstatus == int(pytest.ExitCode.TESTS_FAILED) and state.comparison is None


def test_the_markdown_is_written_where_asked(tmp_path, monkeypatch):
    here(monkeypatch, multi("a", AGAIN, seed=10))
    state = GateState(baseline=multi("a", BASE), baseline_path=tmp_path / "main.json")
    finished(tmp_path, options(tmp_path, markdown=tmp_path / "summary.md"), state)
    assert (tmp_path / "summary.md").read_text().strip()


def test_no_benchmark_session_or_an_older_one_reads_as_not_disabled(tmp_path, monkeypatch):
    here(monkeypatch, None)
    for bs in (SimpleNamespace(), "none"):
        s = Session(tmp_path, options(tmp_path), state := GateState())
        if bs == "none":
            del s.config._benchmarksession
        else:
            s.config._benchmarksession = bs
        finish.finish_gate(s, 0)
        assert state.lines == ["aorta gate: NOTHING COMPARED: no benchmark ran in this run, nothing saved"]


def test_a_run_without_benchmarks_says_so_and_the_runs_are_written_together(tmp_path, monkeypatch):
    empty = run([])
    here(monkeypatch, empty)
    state = GateState(baseline=multi("a", BASE), baseline_path=tmp_path / "main.json")
    s = Session(tmp_path, options(tmp_path, runs=2), state)
    written = []

    def write_combined(config, doc, to):
        assert config is s.config and to is state
        written.append(doc)

    monkeypatch.setattr(finish, "write_combined", write_combined)
    finish.finish_gate(s, 0)
    assert state.lines[0] == "aorta gate: no benchmark results in this run"
    assert written == [empty]


def test_a_failed_confirmation_gives_no_verdict_and_its_code(tmp_path, monkeypatch):
    here(monkeypatch, multi("a", SLOW, seed=10))
    bad = child(tmp_path, "c1", None, code=9, label="confirm 1/2")

    def confirm(config, opts, state, comp):
        state.children.append(bad)
        return []

    monkeypatch.setattr(finish, "confirm_suspects", confirm)
    state = GateState(baseline=multi("a", BASE), baseline_path=tmp_path / "main.json")
    s = finished(tmp_path, options(tmp_path, confirm=2), state)
    assert s.exitstatus == 9 and state.comparison is None
    assert state.lines == [f"aorta gate: confirm 1/2 failed (exit 9): no verdict; its output: {bad.log_path}"]


def test_an_auto_gate_keeps_the_verdict_of_its_looks(tmp_path, monkeypatch):
    here(monkeypatch, multi("a", AGAIN, seed=10))
    outcome = auto_runs.AutoOutcome(comparison="looked", stop_reason="every figure decided")
    monkeypatch.setattr(finish, "overall_exit", lambda comps: EXIT_REGRESSION if comps == ["looked"] else 0)
    monkeypatch.setattr(finish, "terminal_lines", lambda comp, verbose: [f"verdict of {comp}"])
    monkeypatch.setattr(finish, "write_outputs", lambda comps, code, **kw: [f"wrote {comps} {code}"])
    monkeypatch.setattr(finish, "confirm_suspects", lambda *a: pytest.fail("auto confirms nothing"))
    state = GateState(baseline=multi("a", BASE), baseline_path=tmp_path / "main.json", auto=outcome)
    s = finished(tmp_path, options(tmp_path, runs=0, confirm=2), state)
    assert s.exitstatus == EXIT_REGRESSION and state.comparison == "looked"
    assert state.lines[:2] == ["verdict of looked", f"wrote ['looked'] {EXIT_REGRESSION}"]
    assert state.lines[2] == "aorta gate: auto: 0 run(s) 0 s; stopped at every figure decided"


def test_an_auto_gate_of_fixed_runs_names_them(tmp_path, monkeypatch):
    here(monkeypatch, multi("a", AGAIN, seed=10))
    state = GateState(auto=auto_runs.AutoOutcome(stop_reason="the cap of 3 runs"))
    monkeypatch.setattr(finish, "save_run", lambda *a: ("saved", True))
    finished(tmp_path, options(tmp_path, runs=3, compare_ref=None, save_name="nb"), state)
    assert state.lines[:2] == ["aorta gate: 3 runs: 0 run(s) 0 s; stopped at the cap of 3 runs", "saved"]


# ------------------------------------------------------------------------------------------ the save
def test_a_save_writes_the_baseline_and_says_its_runs_noise_and_blocks(tmp_path, monkeypatch):
    docs = [run([bench("a", c, seed=k)]) for k, c in enumerate(AGAIN)]
    for k, d in enumerate(docs):
        d[blocks.RUN_KEY] = blocks.run_block(k + 1, blocks.LEAN, "sel", sample=True)
    doc = bl.combine_runs(docs, ["run1", "run2", "run3"])
    here(monkeypatch, doc)
    state = GateState()
    settings = GateSettings(min_effect=0.02, max_mde=0.2, thresholds=(Threshold("*", "tflops", 0.03),))
    opts = options(tmp_path, compare_ref=None, save_name="nb", runs=3, settings=settings)
    s = finished(tmp_path, opts, state)
    assert s.exitstatus == 0
    path = tmp_path / "baselines" / "nvidia-h100-80gb-hbm3-x1" / "nb.json"
    saved = json.loads(path.read_text())["aorta_baseline"]
    assert saved["name"] == "nb" and len(saved["runs"]) == 3
    assert saved["options"] == {
        "rounds": 5,  # the run's own options, from the hook
        "device": "cuda",
        "min_effect": 0.02,
        "alpha": 0.01,
        "thresholds": [{"benchmark_glob": "*", "metric_glob": "tflops", "min_effect": 0.03}],
    }
    profile = saved["noise_profile"]
    assert (profile["max_mde"], profile["planned_runs"], profile["gateable"], profile["not_gateable"]) == (
        0.2,
        3,
        2,
        0,
    )
    (line,) = state.lines
    assert line.startswith(
        f"baseline 'nb' saved: {path} (1 benchmarks, 3 runs); noise profile: 2 of 2 figures gateable (MDE at "
        "most 20% with 3 candidate runs)"
    )
    assert line.endswith("; 3 lean blocks a later compare pairs with (its runs past 3 repeat them)")


def test_a_save_of_one_run_without_blocks_hints_at_more_runs(tmp_path, monkeypatch):
    here(monkeypatch, run([bench("a", 10.0)]))
    state = GateState()
    finished(tmp_path, options(tmp_path, compare_ref=None, save_name="nb"), state)
    assert state.lines[0].endswith(
        "(1 benchmarks, 1 run: save it again, or with --aorta-runs N, to give the gate the noise between runs); "
        "noise profile: 0 of 2 figures gateable (MDE at most 5% with 3 candidate runs)"
    )
    monkeypatch.setenv("WORLD_SIZE", "")  # set but empty: one process
    state = GateState()
    finished(tmp_path, options(tmp_path, compare_ref=None, save_name="nb1"), state)
    assert "(1 benchmarks, 1 run: save it again, or with --aorta-runs N" in state.lines[0]
    monkeypatch.setenv("WORLD_SIZE", "2")
    state = GateState()
    finished(tmp_path, options(tmp_path, compare_ref=None, save_name="nb2"), state)
    assert "1 run: launch torchrun again with the same --aorta-save-baseline NAME" in state.lines[0]


@pytest.mark.parametrize(
    "exitstatus, gate_code, rank, line, ok",
    [
        (
            1,
            0,
            "0",
            "baseline 'nb' NOT saved: pytest exit status 1 (failed or interrupted tests); the saved one, if any, "
            "is unchanged",
            False,
        ),
        (
            0,
            10,
            "0",
            "baseline 'nb' NOT saved: the comparison in this run exited 10; the saved one, if any, is unchanged",
            False,
        ),
        (0, 0, "1", "baseline 'nb': written by rank 0 only", True),
    ],
)
def test_a_save_refused_or_left_to_rank_0_writes_nothing(
    tmp_path, monkeypatch, exitstatus, gate_code, rank, line, ok
):
    monkeypatch.setenv("RANK", rank)
    s = Session(tmp_path, options(tmp_path), GateState())
    said, saved = finish.save_run(
        run([bench("a", 10.0)]), "nb", options(tmp_path), s.config, exitstatus, gate_code
    )
    assert (said, saved) == (line, ok)
    assert not (tmp_path / "baselines").exists()


def test_a_save_that_cannot_be_written_says_why_and_exits_13(tmp_path, monkeypatch):
    here(monkeypatch, run([bench("a", 10.0)]))
    (tmp_path / "baselines").write_text("a file")
    state = GateState()
    s = finished(tmp_path, options(tmp_path, compare_ref=None, save_name="nb"), state)
    assert s.exitstatus == EXIT_NOT_SAVED
    assert state.lines[0].startswith("baseline 'nb' NOT saved: ")
    assert state.lines[0].endswith(f"; the saved one, if any, is unchanged -> exit {EXIT_NOT_SAVED}")


def test_a_compare_and_save_saves_only_a_clean_run(tmp_path, monkeypatch):
    here(monkeypatch, multi("a", SLOW, seed=10))
    state = GateState(baseline=multi("a", BASE), baseline_path=tmp_path / "main.json")
    s = finished(tmp_path, options(tmp_path, save_name="nb", runs=1), state)
    assert s.exitstatus == EXIT_REGRESSION
    assert state.lines[-1].startswith("baseline 'nb' NOT saved: the comparison in this run exited 10")


def test_a_replaced_baseline_starts_afresh_an_added_run_joins(tmp_path, monkeypatch):
    for k, (replace, runs) in enumerate(((False, 1), (False, 2), (True, 1))):
        here(monkeypatch, run([bench("a", 10.0, seed=k)]))
        state = GateState()
        finished(
            tmp_path, options(tmp_path, compare_ref=None, save_name="nb", replace_baseline=replace), state
        )
        assert f"(1 benchmarks, {runs} run" in state.lines[0], (replace, state.lines)


def test_plain_runs_a_run_that_exited_0_without_its_json_failed(tmp_path):
    kid = child(tmp_path, "r1", None, code=0, label="run 1/2")
    state = GateState(children=[kid])
    s = finished(tmp_path, options(tmp_path, compare_ref=None, runs=2), state)
    assert s.exitstatus == int(pytest.ExitCode.TESTS_FAILED)
    assert state.lines == [f"aorta gate: run 1/2 failed (exit 0); its output: {kid.log_path}"]
