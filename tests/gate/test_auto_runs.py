"""``--aorta-runs auto`` (aorta.gate.session.auto_runs): runs added at the scheduled looks until every figure is
decided, only of the undecided benchmarks, lean after the first, never past the budget; and a compare that
judged too little is inconclusive (exit 15), never clean."""

import json
import re
from pathlib import Path

import pytest

from aorta.exit_codes import EXIT_CLEAN, EXIT_INCONCLUSIVE, EXIT_REGRESSION
from aorta.gate.baselines import baseline as bl
from aorta.gate.comparison.compare import GateSettings, compare_runs
from aorta.gate.outputs.render import terminal_lines
from aorta.gate.runs.fresh_runs import ChildRun
from aorta.gate.session.auto_runs import run_auto, undecided
from aorta.gate.stats.sequential import Budget
from tests.gate.test_gate_offline import bench, multi, run

AUTO = GateSettings(looks=5)


class FakeRuns:
    """Each run: one document with benchmarks 'quiet' (0.3% noise) and "noisy" (about 1.7% between runs)."""

    def __init__(self, folder: Path, wall_s=10.0, slow=1.0):
        self.folder = folder
        self.started: list[tuple[int, tuple | None, bool]] = []
        self.docs: dict[Path, dict] = {}
        self.wall_s, self.slow = wall_s, slow

    def start(self, k, only, lean):
        self.started.append((k, tuple(only) if only is not None else None, lean))
        noisy = 10.0 * (1 + 0.015 * ((-1) ** k) * (k % 3))
        benches = [bench("quiet", 10.0 * self.slow, seed=k), bench("noisy", noisy * self.slow, seed=50 + k)]
        if only is not None:
            benches = [b for b in benches if b["fullname"] in only]
        path = self.folder / f"run{k}.json"
        self.docs[path] = run(benches)
        path.write_text(json.dumps(self.docs[path]))
        # run 0 is the check run: full, and not a sample (a hardware-queue command with checks apart)
        label = "check run" if k == 0 else f"run {k}/auto"
        return ChildRun(label, 0, path, path, self.wall_s, lean, sample=k > 0)

    def judge(self, baseline):
        def judge(full, restricted):
            ids = [f"run{i + 1}" for i in range(len(full) + len(restricted))]
            cand = bl.combine_runs([self.docs[c.json_path] for c in full], ids[: len(full)])
            extra = [self.docs[c.json_path] for c in restricted]
            return compare_runs(baseline, cand, AUTO, extra_runs=extra, extra_ids=ids[len(full) :])

        return judge


def baseline_of_both(runs=10):
    docs = [
        run(
            [
                bench("quiet", 10.0, seed=100 + i),
                bench("noisy", 10.0 * (1 + 0.015 * ((-1) ** i) * (i % 3)), seed=200 + i),
            ]
        )
        for i in range(runs)
    ]
    return bl.combine_runs(docs, [f"b{i}" for i in range(runs)])


def test_the_quiet_benchmark_stops_at_the_first_look_the_noisy_one_gets_the_later_runs(tmp_path):
    fake = FakeRuns(tmp_path)
    out = run_auto(fake.start, Budget(10_000), judge=fake.judge(baseline_of_both()))
    assert [k for k, _, _ in fake.started[:4]] == [0, 1, 2, 3]  # the check run, then the samples
    assert [only for _, only, _ in fake.started[:4]] == [None, None, None, None]
    assert [lean for _, _, lean in fake.started] == [False] + [True] * (len(fake.started) - 1)
    assert out.check is not None and out.check not in out.samples  # its figures are never samples
    later = {only for _, only, _ in fake.started[4:]}
    assert later == {("benchmarks/hw_queue/test_x.py::noisy",)}  # only the undecided benchmark runs on
    assert out.comparison is not None and out.comparison.exit_code == EXIT_CLEAN
    quiet = [v for v in out.comparison.verdicts if v.benchmark.endswith("quiet")]
    assert {v.cand_runs for v in quiet} == {3}  # decided at the first look
    assert out.looks[0].startswith("look at 3 run(s)")


def auto_on_a_clock(tmp_path, budget_s):
    """An auto gate whose every run takes 100 s of a fake clock."""
    fake = FakeRuns(tmp_path, wall_s=100.0)
    now = [0.0]

    def start(k, only, lean):
        now[0] += 100.0
        return fake.start(k, only, lean)

    return fake, run_auto(start, Budget(budget_s), judge=fake.judge(baseline_of_both()), clock=lambda: now[0])


def test_no_run_starts_past_the_budget_and_the_stop_says_so(tmp_path):
    fake, out = auto_on_a_clock(tmp_path, budget_s=250.0)
    assert len(fake.started) == 2 and "250 s budget" in out.stop_reason
    assert len(out.looks) == 1  # judged once: no look without a new run


def test_a_budget_that_ends_after_a_look_judges_no_more(tmp_path):
    fake, out = auto_on_a_clock(tmp_path, budget_s=350.0)
    assert len(fake.started) == 3 and len(out.looks) == 1
    assert out.stop_reason == "the 350 s budget (1 benchmark(s) undecided)"


def test_saving_runs_until_the_budget_or_the_cap(tmp_path):
    fake = FakeRuns(tmp_path)
    out = run_auto(fake.start, Budget(10_000, max_runs=4), judge=None)
    assert len(out.full) == 4 and out.stop_reason == "the cap of 4 runs"


def test_a_failed_run_ends_the_loop_and_nothing_is_judged(tmp_path):
    fake = FakeRuns(tmp_path)

    def start(k, only, lean):
        c = fake.start(k, only, lean)
        return ChildRun(c.label, 1 if k == 2 else 0, c.json_path, c.log_path, c.wall_s)

    judged = []
    out = run_auto(start, Budget(10_000), judge=lambda f, r: judged.append(1))
    assert out.failed is not None and out.failed.label == "run 2/auto" and not judged


def test_a_slowdown_is_found_and_the_auto_gate_goes_red(tmp_path):
    fake = FakeRuns(tmp_path, slow=1.06)
    out = run_auto(fake.start, Budget(10_000), judge=fake.judge(baseline_of_both()))
    assert out.comparison.exit_code == EXIT_REGRESSION


def test_undecided_names_benchmarks_more_runs_could_decide():
    base = multi("a", [10.0, 10.4, 9.6])  # 4% between runs: not gateable at 3 v 3
    comp = compare_runs(base, multi("a", [10.0, 10.4, 9.6], seed=5), AUTO)
    assert comp.verdicts[0].outcome == "NOT_GATEABLE"
    assert undecided(comp, runs_left=17) == []  # 3 baseline runs: no candidate runs bring this MDE to 5%
    quiet = compare_runs(multi("a", [10.0, 10.05, 9.95]), multi("a", [10.0, 10.05, 9.95], seed=5), AUTO)
    assert all(v.outcome == "SAME" for v in quiet.verdicts) and undecided(quiet, 17) == []


def test_one_run_against_one_run_25_percent_slower_is_inconclusive_and_shows_the_change():
    comp = compare_runs(run([bench("a", 10.0, seed=1)]), run([bench("a", 12.5, seed=2)]))
    assert comp.exit_code == EXIT_INCONCLUSIVE
    assert "INCONCLUSIVE: judged 0 of 2 figures" in comp.summary()
    text = "\n".join(terminal_lines(comp))
    assert re.search(
        r"\[device_ms\] .*: \+2\d\.\d% \(10 -> 12\.\d+ ms, 1 vs 1 run\): one run on each side", text
    )
    assert "exit 15 (inconclusive" in text


def test_a_compare_that_judged_under_the_stated_share_is_inconclusive_at_it_clean():
    base, cand = multi("a", [10.0, 10.03, 9.97, 10.01]), multi("a", [10.02, 9.98, 10.0])
    comp = compare_runs(base, cand, GateSettings(min_judged=0.5))
    assert comp.judged == 2 and comp.exit_code == EXIT_CLEAN
    noisy = compare_runs(base, multi("a", [10.0, 10.6, 9.4]), GateSettings(min_judged=0.5))
    assert noisy.judged < 1 and noisy.exit_code == EXIT_INCONCLUSIVE


@pytest.mark.parametrize(
    "budget_s,reason",
    [
        (1.0, "the 1 s budget (no repeat run fits)"),  # the check run is no sample: nothing to judge
        (10_000, "no figure more runs could decide (2 not judged)"),
    ],
)
def test_a_stop_with_figures_not_judged_never_says_every_figure_decided(
    tmp_path, monkeypatch, budget_s, reason
):
    """``--aorta-budget 1s`` (issue 46): one run, no figure judged, none that more runs could decide (one run
    has no test behind its UNSURE); the stop names the budget, or says why, never "every figure decided"."""
    from aorta.gate.session import auto_runs

    monkeypatch.setattr(auto_runs, "undecided", lambda comp, left, both_sides=False: [])
    fake = FakeRuns(tmp_path, wall_s=100.0)
    now = [0.0]

    def start(k, only, lean):
        now[0] += 100.0
        return fake.start(k, only, lean)

    out = run_auto(start, Budget(budget_s), judge=fake.judge(baseline_of_both(runs=1)), clock=lambda: now[0])
    assert out.stop_reason == reason
    assert budget_s > 1 or not out.looks
