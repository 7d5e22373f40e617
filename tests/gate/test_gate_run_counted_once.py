"""One run is counted once (issue 38, cases 12 and 13): a candidate file given three times, a baseline holding
one run four times and ``aorta noise`` over one file three times all see one run, with a line naming the
repeats; a run saved twice is stored once."""

import json

from test_gate_offline import bench, multi, run

from aorta.cli import main
from aorta.exit_codes import EXIT_USAGE
from aorta.gate.baselines import baseline as bl
from aorta.gate.stats.samples import baseline_runs
from aorta.record.run_samples import RUNS_KEY


def write(path, doc):
    path.write_text(json.dumps(doc))
    return str(path)


def test_one_candidate_file_given_three_times_is_one_run(tmp_path, capsys):
    ref = write(tmp_path / "ref.json", multi("a", [10.0, 10.1, 9.9]))
    cand = write(tmp_path / "cand.json", run([bench("a", 30.0, seed=7)]))  # 3x slower
    main(["compare", ref, cand, cand, cand, "--verdict-json", ""])
    out, err = capsys.readouterr()
    assert "runs (the sample): baseline 3, this run 1" in out
    assert "aorta compare: note: the candidate's files together: aorta_runs[1] " in err
    assert "holds the same samples as aorta_runs[0] " in err and "one run, counted once" in err


def test_a_baseline_holding_one_run_four_times_is_one_run(tmp_path, capsys):
    doc = multi("a", [10.0])
    doc["aorta_runs"] = doc["aorta_runs"] * 4
    assert len(baseline_runs(doc)) == 1
    ref = write(tmp_path / "ref.json", doc)
    cand = write(tmp_path / "cand.json", multi("a", [10.0, 10.1], seed=5))
    main(["compare", ref, cand, "--verdict-json", ""])
    out, err = capsys.readouterr()
    assert "runs (the sample): baseline 1, this run 2" in out
    assert err.count(f"aorta compare: note: {ref}: aorta_runs[") == 3


def test_a_run_saved_twice_is_stored_once(tmp_path):
    one = run([bench("a", 10.0)])
    bl.save_baseline(one, tmp_path, "base", {})
    path, n = bl.save_baseline(one, tmp_path, "base", {})
    assert n == 1 and len(json.loads(path.read_text())["aorta_baseline"][RUNS_KEY]) == 1


def test_noise_over_one_file_given_three_times_is_one_run_and_refused(tmp_path, capsys):
    path = write(tmp_path / "run.json", run([bench("a", 10.0)]))
    assert main(["noise", path, path, path]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert (
        f"aorta noise: note: run 2 ({path}) holds the same samples as run 1 ({path}): one run, counted once"
        in err
    )
    assert f"aorta noise: 1 run in {path}, {path}, {path}: the noise between runs needs two or more" in err


def test_runs_with_the_same_samples_measured_at_other_times_are_two_runs(tmp_path, capsys):
    """Runs written by a script may share samples; what was measured at two times is two runs."""
    a, b = run([bench("a", 10.0)]), run([bench("a", 10.0)])
    a["datetime"], b["datetime"] = "2026-11-01T00:00:00", "2026-11-02T00:00:00"
    pa, pb = write(tmp_path / "a.json", a), write(tmp_path / "b.json", b)
    main(["noise", pa, pb])
    assert "counted once" not in capsys.readouterr().err
