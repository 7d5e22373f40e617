"""What the gate refuses before any benchmark runs (``aorta.gate.session.before_run``), called in this process
with a small fake config: the machine it reads, a gate that would time nothing, the baseline found by name or
path and refused from another machine, scheduling settings that differ, outputs that cannot be written or are
the run's own inputs, and the order of it all (the inputs first: a refused run creates no folder). Each
refusal is asserted word for word where it names the option, the value and what to do."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from test_gate_offline import H100, bench, multi, run

from aorta.device import SCHEDULING_ENV_PATTERN
from aorta.exit_codes import EXIT_NOT_SAVED, EXIT_SETTINGS_DIFFER
from aorta.gate.baselines import save_check
from aorta.gate.comparison.compare import GateSettings
from aorta.gate.session import before_run as br
from aorta.gate.session.options import DEFAULT_BUDGET_S, GateOptions
from aorta.gate.session.state import GateState

H100_KEY = "nvidia-h100-80gb-hbm3-x1"
NOTSET = object()


class Config:
    def __init__(self, device=("cuda", H100["gpu_name"], 1), plugins=(), history=None, **opts) -> None:
        backend, name, count = device
        props = SimpleNamespace(backend=backend, name=name, device_count=count)
        self.device = SimpleNamespace(properties=lambda: props)
        declared = {"aorta_allow_env_diff": [], "benchmark_json": None, "benchmark_disable": False}
        declared["benchmark_skip"] = False
        if "xdist" in plugins:  # its option is declared where the plugin is
            declared["numprocesses"] = None
        self.opts, self.calls = {**declared, **opts}, []

        def session_device(config):
            assert config is self, "the hook is asked about this run's config"
            return self.device

        def history_baseline(config, ref, machine_model):
            assert config is self, "the hook is asked about this run's config"
            self.calls.append((ref, machine_model))
            return history

        self.hook = SimpleNamespace(
            pytest_aorta_session_device=session_device, pytest_aorta_history_baseline=history_baseline
        )
        self.pluginmanager = SimpleNamespace(hasplugin=lambda name: name in plugins)

    def getoption(self, name, default=NOTSET):
        """As pytest's: an option nobody declared is a ``ValueError`` unless a default is given."""
        if name in self.opts:
            return self.opts[name]
        if default is NOTSET:
            raise ValueError(f"no option named {name!r}")
        return default


def options(tmp_path: Path, **kw) -> GateOptions:
    base = dict(
        save_name=None,
        replace_baseline=False,
        compare_ref=None,
        baseline_dir=tmp_path / "baselines",
        runs_root=tmp_path / "runs",
        settings=GateSettings(),
        confirm=0,
        runs=1,
        verdict_json=tmp_path / "out" / "verdict.json",
        markdown=None,
        test_slowdown=0.0,
        budget_s=DEFAULT_BUDGET_S,
    )
    return GateOptions(**{**base, **kw})


def usage(fn, *args) -> str:
    with pytest.raises(pytest.UsageError) as exc:
        fn(*args)
    return str(exc.value)


def exits(fn, *args) -> tuple[int, str]:
    with pytest.raises(pytest.exit.Exception) as exc:
        fn(*args)
    return exc.value.returncode, str(exc.value.msg)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    """No scheduling setting, no step summary, rank 0."""
    for name in list(os.environ):
        if SCHEDULING_ENV_PATTERN.match(name) or name in ("GITHUB_STEP_SUMMARY", "RANK"):
            monkeypatch.delenv(name)


def save(directory: Path, key: str, name: str, doc: dict) -> Path:
    path = directory / key / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


# ------------------------------------------------------------------------------------------ the machine
def test_the_current_machine_is_the_devices_backend_model_and_count():
    got = br.current_machine(Config(device=("rocm", "AMD Instinct MI300X", 8)))
    assert got == {
        "machine_info": {"aorta": {"backend": "rocm", "gpu_name": "AMD Instinct MI300X", "gpu_count": 8}}
    }
    cpu = br.current_machine(Config(device=("cpu", "some cpu", 1)))
    assert cpu == {"machine_info": {"aorta": {"backend": "cpu", "gpu_name": None, "gpu_count": 0}}}


# ------------------------------------------------------------------------------------------ nothing timed
XDIST = (
    "with --aorta-compare: pytest-xdist disables pytest-benchmark, so no benchmark would be timed and the gate "
    "would judge nothing; run the gate without -n (or with -n 0)"
)
TIMES_NOTHING = "with --aorta-compare: no benchmark would be timed and the gate would judge nothing; leave out one of the two"


@pytest.mark.parametrize(
    "opts, says",
    [
        ({"numprocesses": 4}, f"-n 4 {XDIST}"),
        ({"numprocesses": "auto"}, f"-n auto {XDIST}"),
        ({"benchmark_disable": True}, f"--benchmark-disable {TIMES_NOTHING}"),
        ({"benchmark_skip": True}, f"--benchmark-skip {TIMES_NOTHING}"),
    ],
)
def test_a_compare_that_would_time_nothing_is_refused_naming_both(tmp_path, opts, says):
    said = usage(
        br.refuse_runs_without_benchmarks,
        Config(plugins=("xdist",), **opts),
        options(tmp_path, compare_ref="b"),
    )
    assert said == says


def test_a_save_that_would_time_nothing_names_the_save(tmp_path):
    said = usage(
        br.refuse_runs_without_benchmarks, Config(benchmark_skip=True), options(tmp_path, save_name="nb")
    )
    assert said.startswith("--benchmark-skip with --aorta-save-baseline: ")
    assert said.endswith("leave out one of the two")
    both = options(tmp_path, save_name="nb", compare_ref="b")
    assert usage(br.refuse_runs_without_benchmarks, Config(benchmark_skip=True), both).startswith(
        "--benchmark-skip with --aorta-compare: "
    )


def test_what_times_something_is_not_refused(tmp_path):
    gate = options(tmp_path, compare_ref="b")
    br.refuse_runs_without_benchmarks(Config(plugins=("xdist",), numprocesses=0), gate)  # -n 0: no workers
    br.refuse_runs_without_benchmarks(Config(numprocesses=4), gate)  # xdist not installed: -n is not its
    br.refuse_runs_without_benchmarks(Config(benchmark_disable=True), options(tmp_path))  # no gate
    worker = Config(plugins=("xdist",), numprocesses=4)
    worker.workerinput = {}
    br.refuse_runs_without_benchmarks(worker, gate)  # an xdist worker: its controller refused or not


# ------------------------------------------------------------------------------------------ output places
def test_the_runs_folder_is_checked_where_runs_or_confirmations_are_started(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    for kw in ({"runs": 3}, {"runs": 0}, {"confirm": 2, "compare_ref": "b"}):
        said = usage(br.check_output_places, options(tmp_path, runs_root=blocker / "runs", **kw))
        assert said.startswith("--aorta-runs-dir (default .aorta/runs)"), kw
        assert str(blocker) in said
    br.check_output_places(options(tmp_path, runs_root=blocker / "runs"))  # one run here: no runs folder


def test_the_baseline_folder_is_checked_only_when_saving(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    said = usage(br.check_output_places, options(tmp_path, save_name="nb", baseline_dir=blocker / "b"))
    assert said.startswith("--aorta-baseline-dir") and str(blocker) in said
    br.check_output_places(options(tmp_path, compare_ref="b", baseline_dir=blocker / "b"))


def test_the_verdict_files_are_checked_when_comparing_on_rank_0(tmp_path, monkeypatch):
    folder = tmp_path / "a_folder"
    folder.mkdir()
    said = usage(br.check_output_places, options(tmp_path, compare_ref="b", verdict_json=folder))
    assert said.startswith("--aorta-verdict-json")
    said = usage(br.check_output_places, options(tmp_path, compare_ref="b", markdown=folder))
    assert said.startswith("--aorta-markdown")
    br.check_output_places(
        options(tmp_path, save_name="nb", verdict_json=folder, markdown=folder)
    )  # no compare
    monkeypatch.setenv("RANK", "1")
    br.check_output_places(options(tmp_path, compare_ref="b", verdict_json=folder))  # rank 0 writes them


def test_the_step_summary_is_checked_when_set_and_comparing(tmp_path, monkeypatch):
    folder = tmp_path / "a_folder"
    folder.mkdir()
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(folder))
    assert usage(br.check_output_places, options(tmp_path, compare_ref="b")).startswith(
        "$GITHUB_STEP_SUMMARY"
    )
    br.check_output_places(options(tmp_path))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    br.check_output_places(options(tmp_path, compare_ref="b"))


# ------------------------------------------------------------------------------------------ outputs vs inputs
def test_an_output_over_the_compared_baseline_is_refused_naming_it(tmp_path):
    state = GateState(baseline_path=tmp_path / "base.json")
    said = usage(
        br.check_outputs_are_not_inputs,
        Config(benchmark_json=str(tmp_path / "base.json")),
        options(tmp_path, compare_ref="b"),
        state,
        None,
    )
    assert said.startswith("--benchmark-json") and "the baseline compared with (--aorta-compare)" in said
    opts = options(tmp_path, compare_ref="b", verdict_json=tmp_path / "base.json")
    assert usage(br.check_outputs_are_not_inputs, Config(), opts, state, None).startswith(
        "--aorta-verdict-json"
    )
    opts = options(tmp_path, markdown=tmp_path / "saved.json")
    said = usage(br.check_outputs_are_not_inputs, Config(), opts, GateState(), tmp_path / "saved.json")
    assert said.startswith("--aorta-markdown") and "(--aorta-save-baseline)" in said


def test_a_history_file_where_the_baseline_is_saved_is_refused_before_the_history_is_made(tmp_path):
    saved = tmp_path / "saved.json"
    said = usage(
        br.check_outputs_are_not_inputs,
        Config(aorta_history=str(saved)),
        options(tmp_path),
        GateState(),
        saved,
    )
    assert said.startswith("--aorta-history") and "(--aorta-save-baseline)" in said
    for elsewhere in (str(tmp_path / "h.db"), "postgresql://u@h/db", "host=h dbname=aorta"):
        br.check_outputs_are_not_inputs(
            Config(aorta_history=elsewhere), options(tmp_path), GateState(), saved
        )
    from aorta.history import (
        plugin as history_plugin,
    )  # its file is made at configure: after the gate's checks

    assert history_plugin.pytest_configure.pytest_impl.get("trylast")


def test_the_verdict_file_and_step_summary_are_outputs_only_when_comparing(tmp_path, monkeypatch):
    saved = tmp_path / "saved.json"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(saved))
    br.check_outputs_are_not_inputs(Config(), options(tmp_path, verdict_json=saved), GateState(), saved)
    said = usage(
        br.check_outputs_are_not_inputs, Config(), options(tmp_path, compare_ref="b"), GateState(), saved
    )
    assert said.startswith("$GITHUB_STEP_SUMMARY")


# ------------------------------------------------------------------------------------------ the save
def test_a_save_is_checked_now_with_this_machine_and_python(tmp_path, monkeypatch):
    seen = {}

    def check_save(directory, name, current, *, replace):
        seen.update(directory=directory, name=name, current=current, replace=replace)
        return Path("/the/file.json")

    config = Config(device=("cuda", "B200", 2))
    monkeypatch.setattr(save_check, "check_save", check_save)
    monkeypatch.setattr(
        "aorta.environment.machine.machine_info",
        lambda device: {"backend": "cuda", "gpu_count": device.properties().device_count},
    )
    monkeypatch.setattr("platform.python_version", lambda: "3.99.1")
    opts = options(tmp_path, save_name="nb", replace_baseline=True)
    assert br.check_save_now(config, opts) == Path("/the/file.json")
    want_current = {
        "machine_info": {"aorta": {"backend": "cuda", "gpu_count": 2}, "python_version": "3.99.1"}
    }
    assert seen == dict(directory=tmp_path / "baselines", name="nb", current=want_current, replace=True)
    seen.clear()
    assert br.check_save_now(Config(), options(tmp_path)) is None and seen == {}  # no save: nothing checked


def test_a_refused_save_is_a_usage_error_or_exits_with_its_code(tmp_path, monkeypatch):
    monkeypatch.setattr("aorta.environment.machine.machine_info", lambda device: {})
    codes = iter([save_check.EXIT_PYTEST_USAGE, EXIT_NOT_SAVED])

    def check_save(directory, name, current, *, replace):
        raise save_check.SaveRefused(f"--aorta-save-baseline {name}: no", next(codes))

    monkeypatch.setattr(save_check, "check_save", check_save)
    opts = options(tmp_path, save_name="nb")
    assert usage(br.check_save_now, Config(), opts) == "--aorta-save-baseline nb: no"
    assert exits(br.check_save_now, Config(), opts) == (EXIT_NOT_SAVED, "--aorta-save-baseline nb: no")


# ------------------------------------------------------------------------------------------ the baseline
def test_a_name_is_found_under_this_machines_key_and_read(tmp_path):
    doc = multi("a", [10.0, 10.1])
    path = save(tmp_path / "baselines", H100_KEY, "main", doc)
    save(
        tmp_path / "baselines",
        "amd-instinct-mi300x-x1",
        "main",
        multi("a", [9.0, 9.1], gpu_name="AMD Instinct MI300X"),
    )
    state = GateState()
    br.load_baseline(Config(), "main", options(tmp_path, compare_ref="main"), state)
    assert (state.baseline_path, state.baseline["benchmarks"][0]["name"]) == (path, "a")
    assert state.baseline == json.loads(path.read_text()) and state.lines == []


def test_a_baseline_of_another_gpu_model_is_refused_naming_both(tmp_path):
    path = save(
        tmp_path / "baselines",
        "amd-instinct-mi300x-x1",
        "main",
        multi("a", [10.0], gpu_name="AMD Instinct MI300X"),
    )
    said = usage(br.load_baseline, Config(), "main", options(tmp_path), GateState())
    assert said == (
        f"--aorta-compare: {path} was saved on 1x AMD Instinct MI300X (cuda), this run is on 1x NVIDIA H100 80GB "
        "HBM3 (cuda) (GPU model differs: baseline 'AMD Instinct MI300X', this run 'NVIDIA H100 80GB HBM3'); a "
        "baseline from another GPU model or backend is refused: compare with one saved on this machine, or pass "
        "--aorta-allow-mismatch to compare anyway"
    )
    by_path = usage(br.load_baseline, Config(), str(path), options(tmp_path), GateState())
    assert by_path == said  # a path is checked against this machine as a name is


def test_allow_mismatch_reads_another_machines_baseline_by_name_or_path(tmp_path):
    path = save(
        tmp_path / "baselines",
        "amd-instinct-mi300x-x1",
        "main",
        multi("a", [10.0], gpu_name="AMD Instinct MI300X"),
    )
    allow = options(tmp_path, settings=GateSettings(allow_mismatch=True))
    for ref in ("main", str(path)):
        state = GateState()
        br.load_baseline(Config(), ref, allow, state)
        assert state.baseline_path == path, ref


def test_a_path_with_allow_mismatch_does_not_ask_the_device(tmp_path):
    path = save(tmp_path, "x", "main", multi("a", [10.0]))
    c = Config()
    c.hook.pytest_aorta_session_device = None  # asked: TypeError
    state = GateState()
    br.load_baseline(c, str(path), options(tmp_path, settings=GateSettings(allow_mismatch=True)), state)
    assert state.baseline_path == path


def test_a_baseline_that_mixes_machines_is_refused(tmp_path):
    doc = multi("a", [10.0, 10.1])
    doc["aorta_baseline"] = {
        "runs": [{**doc["aorta_runs"][0], "machine": {"backend": "cuda", "gpu_name": "B200", "gpu_count": 1}}]
    }
    path = save(tmp_path / "baselines", H100_KEY, "main", doc)
    said = usage(br.load_baseline, Config(), "main", options(tmp_path), GateState())
    assert said.startswith(f"--aorta-compare: {path} mixes machines: aorta_baseline.runs[0] was saved on ")


@pytest.mark.parametrize(
    "setup, says",
    [
        (lambda d: None, "--aorta-compare: --aorta-compare=main: no baseline named 'main' in "),
        (lambda d: save(d, H100_KEY, "main", {"benchmarks": "x"}), "--aorta-compare: "),
    ],
)
def test_a_missing_or_bad_baseline_is_refused_naming_the_option(tmp_path, setup, says):
    setup(tmp_path / "baselines")
    (tmp_path / "baselines").mkdir(exist_ok=True)
    assert usage(br.load_baseline, Config(), "main", options(tmp_path), GateState()).startswith(says)


def test_a_stored_run_that_breaks_the_rules_is_refused_before_any_run(tmp_path):
    doc = multi("a", [10.0, 10.1])
    doc["aorta_runs"][1]["benchmarks"]["benchmarks/hw_queue/test_x.py::a"]["device_ms"][0] = float("nan")
    path = save(tmp_path / "baselines", H100_KEY, "main", doc)
    said = usage(br.load_baseline, Config(), "main", options(tmp_path), GateState())
    assert said.startswith(f"--aorta-compare: {path}"), said
    assert said.endswith(
        "aorta_runs[1] (run 2 of 2).benchmarks['benchmarks/hw_queue/test_x.py::a'].device_ms: nan is not a finite number"
    )


def test_a_repeated_run_is_a_note_on_the_states_lines(tmp_path):
    doc = multi("a", [10.0, 10.1])
    doc["aorta_runs"].append(dict(doc["aorta_runs"][0], id="run3"))
    path = save(tmp_path / "baselines", H100_KEY, "main", doc)
    state = GateState(lines=["before"])
    br.load_baseline(Config(), "main", options(tmp_path), state)
    assert state.lines[0] == "before" and len(state.lines) == 2
    assert re.match(
        rf"aorta gate: note: {re.escape(str(path))}: aorta_runs\[2\] \(run3\) holds the same samples as aorta_runs\[0\]",
        state.lines[1],
    )


def test_a_history_baseline_is_asked_of_its_plugin_with_this_machines_key(tmp_path):
    doc = multi("a", [10.0, 10.1])
    c = Config(history=doc)
    state = GateState()
    br.load_baseline(c, "history:main", options(tmp_path), state)
    assert (c.calls, state.baseline, state.baseline_path) == (
        [("history:main", H100_KEY)],
        doc,
        Path("history:main"),
    )
    said = usage(br.load_baseline, Config(history=None), "history:main", options(tmp_path), GateState())
    assert (
        said
        == "--aorta-compare: history:main: the run history's plugin is not active (-p no:aorta.history.plugin?)"
    )


# ------------------------------------------------------------------------------------------ settings
def test_a_scheduling_setting_that_differs_exits_14_naming_it_unless_allowed(monkeypatch, tmp_path):
    state = GateState(
        baseline=run([bench("a", 10.0)]), baseline_path=tmp_path / "b.json"
    )  # NCCL_NVLS_ENABLE=0
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "1")
    code, said = exits(br.refuse_settings_diff, Config(aorta_allow_env_diff=[]), state)
    assert code == EXIT_SETTINGS_DIFFER
    assert said.startswith(
        f"--aorta-compare: refused (exit {EXIT_SETTINGS_DIFFER}): scheduling settings differ"
    )
    assert f"between the baseline {tmp_path / 'b.json'} and this run: NCCL_NVLS_ENABLE 0 -> 1" in said
    assert "--aorta-allow-env-diff NCCL_NVLS_ENABLE" in said
    br.refuse_settings_diff(Config(aorta_allow_env_diff=["HIP_*,NCCL_NVLS_*"]), state)
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "0")
    br.refuse_settings_diff(Config(aorta_allow_env_diff=[]), state)


# ------------------------------------------------------------------------------------------ prepare
def test_prepare_reads_the_baseline_then_checks_the_outputs(tmp_path, monkeypatch):
    path = save(tmp_path / "baselines", H100_KEY, "main", multi("a", [10.0, 10.1]))
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "0")
    state = br.prepare(Config(), options(tmp_path, compare_ref="main", runs=3))
    assert state.baseline_path == path and state.baseline is not None
    assert (tmp_path / "runs").is_dir() is False  # checked, not made


def test_prepare_refuses_the_inputs_before_the_outputs(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    opts = options(tmp_path, compare_ref="missing", runs=3, runs_root=blocker / "runs")
    (tmp_path / "baselines").mkdir()
    assert usage(br.prepare, Config(), opts).startswith(
        "--aorta-compare: --aorta-compare=missing: no baseline"
    )
    said = usage(br.prepare, Config(benchmark_skip=True), opts)
    assert said.startswith("--benchmark-skip with --aorta-compare")  # before the baseline is looked for


def test_prepare_refuses_settings_before_outputs_and_a_save_into_the_baseline(tmp_path, monkeypatch):
    save(tmp_path / "baselines", H100_KEY, "main", multi("a", [10.0, 10.1]))
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "1")
    opts = options(tmp_path, compare_ref="main", runs=3, runs_root=blocker / "runs")
    assert exits(br.prepare, Config(aorta_allow_env_diff=[]), opts)[0] == EXIT_SETTINGS_DIFFER
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "0")
    assert usage(br.prepare, Config(), opts).startswith("--aorta-runs-dir")
    monkeypatch.setattr(save_check, "check_save", lambda d, n, c, *, replace: tmp_path / "out.json")
    monkeypatch.setattr("aorta.environment.machine.machine_info", lambda device: {})
    saving = options(tmp_path, save_name="nb", markdown=tmp_path / "out.json")
    said = usage(br.prepare, Config(), saving)
    assert said.startswith("--aorta-markdown") and "(--aorta-save-baseline)" in said
