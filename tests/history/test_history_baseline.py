"""A baseline from the history (``--aorta-compare history:STACK``, ``aorta history baseline``) judges as the
same runs saved as a baseline file do."""

from __future__ import annotations

import json

import pytest
from history_docs import run_doc, with_stack

from aorta.cli import main
from aorta.exit_codes import EXIT_USAGE
from aorta.gate.baselines.baseline import combine_runs
from aorta.history.baseline_doc import DEFAULT_LAST, NoHistoryBaseline, parse_history_ref

STACK = "nvidia-h100-80gb-hbm3-x1-cuda13.0-torch2.11.0"


def docs(device_ms, torch="2.11.0+cu130"):
    return [
        run_doc(f"2026-11-2{i}T08:00:00+00:00", ms, machine=with_stack(torch=torch), host=f"h{i}")
        for i, ms in enumerate(device_ms)
    ]


def write(tmp_path, name, doc):
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return str(p)


def verdict_line(capsys) -> str:
    return next(line for line in capsys.readouterr().out.splitlines() if line.startswith("verdict:"))


def test_the_history_baseline_gives_the_verdicts_of_the_same_runs_saved_as_a_file(tmp_path, capsys):
    base = docs([10.0, 10.02, 9.98, 10.01])
    cand = [
        write(tmp_path, f"c{i}.json", d) for i, d in enumerate(docs([10.6, 10.62, 10.58], "2.12.0+cu130"))
    ]
    db = str(tmp_path / "h.db")
    assert (
        main(
            [
                "history",
                "--history",
                db,
                "add",
                *[write(tmp_path, f"b{i}.json", d) for i, d in enumerate(base)],
            ]
        )
        == 0
    )
    assert main(["history", "--history", db, "baseline", STACK, str(tmp_path / "hb.json")]) == 0
    assert "4 runs of" in capsys.readouterr().out
    file_base = write(tmp_path, "fb.json", combine_runs(base, ["r0", "r1", "r2", "r3"]))
    assert main(["compare", file_base, *cand, "--verdict-json", ""]) == 10
    from_files = verdict_line(capsys)
    assert main(["compare", str(tmp_path / "hb.json"), *cand, "--verdict-json", ""]) == 10
    assert verdict_line(capsys) == from_files
    assert "1 SLOWER" in from_files  # device time +6%; busbw unchanged


@pytest.mark.parametrize("last", [None, 3])
def test_the_baseline_is_the_stacks_last_runs_from_a_history_longer_than_the_window(tmp_path, capsys, last):
    # 24 runs of one stack, more than the default window of 20: the four oldest at 12 ms, the rest at 10
    older = [12.0] * 4
    history = [
        run_doc(f"2026-10-{day:02d}T08:00:00+00:00", ms, host=f"h{day}")
        for day, ms in enumerate(older + [10.0] * DEFAULT_LAST, start=1)
    ]
    db, out = str(tmp_path / "h.db"), tmp_path / "hb.json"
    files = [write(tmp_path, f"r{i}.json", d) for i, d in enumerate(history)]
    assert main(["history", "--history", db, "add", *files]) == 0
    window = ["--last", str(last)] if last else []
    assert main(["history", "--history", db, "baseline", STACK, str(out), *window]) == 0
    n = last or DEFAULT_LAST
    assert f"aorta history: {n} runs of {STACK} as a baseline" in capsys.readouterr().out
    runs = json.loads(out.read_text())["aorta_baseline"]["runs"]
    assert [r["saved_at"] for r in runs] == [d["datetime"] for d in history[-n:]]
    assert {r["machine"]["host"] for r in runs} == {f"h{day}" for day in range(25 - n, 25)}


def test_a_stack_the_history_lacks_names_the_stacks_it_holds(tmp_path, capsys):
    db = str(tmp_path / "h.db")
    main(["history", "--history", db, "add", write(tmp_path, "b.json", docs([10.0])[0])])
    assert (
        main(["history", "--history", db, "baseline", "cpu-torch2.13.0", str(tmp_path / "x.json")])
        == EXIT_USAGE
    )
    err = capsys.readouterr().err
    assert (
        f"no run of stack 'cpu-torch2.13.0' on any machine model; it holds: {STACK} (nvidia-h100-80gb-hbm3-x1)"
        in err
    )


@pytest.mark.parametrize(("ref", "parsed"), [("history:s1", ("s1", 20)), ("history:s1:5", ("s1", 5))])
def test_history_refs(ref, parsed):
    assert parse_history_ref(ref) == parsed


@pytest.mark.parametrize("ref", ["history:", "history:s1:1", "history:s1:x"])
def test_a_bad_history_ref_says_what_is_allowed(ref):
    with pytest.raises(NoHistoryBaseline, match="give history:STACK or history:STACK:N with N >= 2 runs"):
        parse_history_ref(ref)
