"""``aorta history add|show|page|prune`` as a user runs them: output lines and exit codes."""

from __future__ import annotations

import json
import math

import pytest
from history_docs import run_doc, with_stack

from aorta.cli import main
from aorta.exit_codes import EXIT_CLEAN, EXIT_USAGE
from aorta.history.schema import SCHEMA_VERSION
from aorta.history.store import open_store


def write_runs(tmp_path, n: int = 32, step_at: int = 16, step: float = 0.2) -> list[str]:
    """``n`` nightly runs; torch 2.11 -> 2.12 at run ``step_at``, where device time grows by ``step``."""
    paths = []
    for i in range(n):
        new = i >= step_at
        doc = run_doc(
            f"2026-11-{1 + i // 24:02d}T{i % 24:02d}:00:00+00:00",
            device_ms=10.0 * (1 + step if new else 1.0) * (1.004 if i % 2 else 0.996),
            machine=with_stack(torch="2.12.0+cu130") if new else None,
        )
        p = tmp_path / f"run{i}.json"
        p.write_text(json.dumps(doc))
        paths.append(str(p))
    return paths


def test_add_then_show_marks_the_stack_change_and_names_it_at_the_change_point(tmp_path, capsys):
    db = str(tmp_path / "h.db")
    assert main(["history", "--history", db, "add", *write_runs(tmp_path)]) == EXIT_CLEAN
    assert "run32.json" not in capsys.readouterr().out
    assert main(["history", "--history", db, "show", "-k", "test_a", "--figure", "device_ms"]) == EXIT_CLEAN
    out = capsys.readouterr().out
    # the 0.996 / 1.004 alternation: log deviations of +-d, d = log(1.004 / 0.996) / 2, 32 runs in 2 stacks (df 30)
    d = math.log(1.004 / 0.996) / 2
    assert f"32 runs, between-run noise {d * math.sqrt(32 / 30) * 100:.2g}%" in out
    assert "-- stack change: versions.torch 2.11.0+cu130 -> 2.12.0+cu130" in out
    assert ">> CHANGE POINT +20.0% (worse, z " in out
    assert "): versions.torch 2.11.0+cu130 -> 2.12.0+cu130" in out
    assert out.rstrip().endswith("1 series, 1 change points")
    lines = out.splitlines()
    assert (
        lines.index(next(x for x in lines if "CHANGE POINT" in x))
        == lines.index(next(x for x in lines if "stack change" in x)) + 1
    )


def test_add_checks_every_file_before_writing_any(tmp_path, capsys):
    db = tmp_path / "h.db"
    good = write_runs(tmp_path, n=1)
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert main(["history", "--history", str(db), "add", *good, str(bad)]) == EXIT_USAGE
    assert "is not valid JSON" in capsys.readouterr().err
    assert not db.exists()


def test_a_newer_history_is_refused_with_exit_2(tmp_path, capsys):
    db = str(tmp_path / "h.db")
    with open_store(db) as store:
        store.execute(f"UPDATE aorta_schema SET version = {SCHEMA_VERSION + 1}")
    assert main(["history", "--history", db, "show"]) == EXIT_USAGE
    assert "written by a newer aorta" in capsys.readouterr().err


def test_prune_keeps_what_is_younger_than_keep(tmp_path, capsys):
    db = str(tmp_path / "h.db")
    old = tmp_path / "old.json"
    old.write_text(json.dumps(run_doc("2020-01-01T00:00:00+00:00")))
    assert main(["history", "--history", db, "add", str(old), *write_runs(tmp_path, n=1)]) == EXIT_CLEAN
    assert main(["history", "--history", db, "prune", "--keep", "180d"]) == EXIT_CLEAN
    assert "pruned 1 runs recorded before" in capsys.readouterr().out
    with open_store(db) as store:
        assert store.count()[0] == 1


@pytest.mark.parametrize("keep", ["180", "0d", "1y", "-3d"])
def test_a_bad_keep_is_a_usage_error_naming_it(keep, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["history", "prune", f"--keep={keep}"])
    assert exc.value.code == EXIT_USAGE
    assert (
        f"--keep={keep!r}: give a positive age in days or hours, e.g. 180d or 12h" in capsys.readouterr().err
    )


def test_the_history_comes_from_the_environment_where_not_given(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("AORTA_HISTORY", str(tmp_path / "env.db"))
    assert main(["history", "add", *write_runs(tmp_path, n=1)]) == EXIT_CLEAN
    assert (tmp_path / "env.db").exists()


@pytest.mark.slow  # matplotlib draws the plots (about 3 s)
def test_page_is_one_file_with_a_plot_per_series_and_the_what_changed_table(tmp_path, capsys):
    db = str(tmp_path / "h.db")
    main(["history", "--history", db, "add", *write_runs(tmp_path)])
    out = tmp_path / "page" / "history.html"
    assert main(["history", "--history", db, "page", str(out)]) == EXIT_CLEAN
    text = out.read_text()
    assert text.count("<svg") == 2  # device_ms and busbw_gbps of test_a
    assert "versions.torch: 2.11.0+cu130 -&gt; 2.12.0+cu130" in text
    assert "+20.0%" in text
    assert "<script" not in text and "src=" not in text  # self-contained: nothing to fetch


def test_the_gates_verdicts_are_kept_with_the_runs_they_judged(tmp_path, capsys):
    db = str(tmp_path / "h.db")
    base, cand = write_runs(tmp_path)[:16], write_runs(tmp_path)[16:19]
    main(["history", "--history", db, "add", *base])
    verdict = tmp_path / "v.json"
    assert main(["compare", write_ref(tmp_path, base), *cand, "--verdict-json", str(verdict)]) == 10
    assert main(["history", "--history", db, "add", *cand, "--verdicts", str(verdict)]) == EXIT_CLEAN
    capsys.readouterr()
    assert main(["history", "--history", db, "show", "--figure", "device_ms"]) == EXIT_CLEAN
    out = capsys.readouterr().out
    assert (
        out.count("gate: SLOWER +19.8%") == 3
    )  # each candidate run carries it (3 runs: 1.2 x the geometric mean 0.9987 / 0.9987... as aorta compare measured)


def write_ref(tmp_path, paths) -> str:
    from aorta.gate.baselines.baseline import combine_runs

    ref = tmp_path / "ref.json"
    ref.write_text(
        json.dumps(
            combine_runs([json.loads(open(p).read()) for p in paths], [str(i) for i in range(len(paths))])
        )
    )
    return str(ref)


def test_verdicts_from_a_file_that_holds_none_are_refused(tmp_path, capsys):
    bad = tmp_path / "v.json"
    bad.write_text("{}")
    assert (
        main(
            [
                "history",
                "--history",
                str(tmp_path / "h.db"),
                "add",
                *write_runs(tmp_path, n=1),
                "--verdicts",
                str(bad),
            ]
        )
        == EXIT_USAGE
    )
    assert "holds no verdicts" in capsys.readouterr().err
