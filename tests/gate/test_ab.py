"""``aorta ab``: two launchers on one machine, alternating fresh processes, B judged against A."""

import json
import shlex
import sys
import textwrap
from pathlib import Path

import pytest

from aorta.cli import main
from aorta.gate.runs.ab import AbError, check_command, pair_order, parse_launcher, run_command

pytest_plugins = ["pytester"]


def test_a_launcher_is_settings_then_a_python_command():
    docker = parse_launcher(
        "--b", "NCCL_MAX_NCHANNELS=4 docker run --rm -v /w:/w -w /w rocm/pytorch:7.1 python", "B"
    )
    assert docker.env == {"NCCL_MAX_NCHANNELS": "4"}
    assert docker.python == ("docker", "run", "--rm", "-v", "/w:/w", "-w", "/w", "rocm/pytorch:7.1", "python")
    plain = parse_launcher("--a", "", "A")
    assert plain.env == {} and plain.python_cmd() == [sys.executable]
    with pytest.raises(AbError, match=r"--a='X=\"1': cannot be split into words"):
        parse_launcher("--a", 'X="1', "A")


def test_each_command_form_runs_under_the_sides_python():
    venv = parse_launcher("--b", "/opt/new/bin/python", "B")
    kw = dict(json_path="/o/B2.json", seed=2, lean=True)
    tail = [
        "--benchmark-json=/o/B2.json",
        "--aorta-order-seed=2",
        "--aorta-kernel-pass-rounds=2",
        "--aorta-lean-run",
    ]
    assert run_command(venv, ["benchmarks/hw_queue", "-m", "p0"], **kw) == [
        "/opt/new/bin/python",
        "-m",
        "pytest",
        "benchmarks/hw_queue",
        "-m",
        "p0",
        *tail,
    ]
    assert run_command(venv, ["pytest", "benchmarks/hw_queue"], **kw)[:4] == [
        "/opt/new/bin/python",
        "-m",
        "pytest",
        "benchmarks/hw_queue",
    ]
    torchrun = ["torchrun", "--standalone", "--nproc_per_node", "2", "-m", "pytest", "benchmarks/fsdp"]
    assert run_command(venv, torchrun, **kw) == [
        "/opt/new/bin/python",
        "-m",
        "torch.distributed.run",
        *torchrun[1:],
        *tail,
    ]
    assert run_command(venv, ["python3", "-m", "pytest", "x"], **kw)[:4] == [
        "/opt/new/bin/python",
        "-m",
        "pytest",
        "x",
    ]


def test_pairs_alternate_so_drift_falls_on_both_sides():
    assert [pair_order(k) for k in (1, 2, 3, 4)] == [("A", "B"), ("B", "A"), ("A", "B"), ("B", "A")]


@pytest.mark.parametrize(
    "cmd, words",
    [
        ([], "no command after '--'"),
        (["benchmarks/hw_queue", "--aorta-compare", "x"], "the command holds --aorta-compare"),
        (["benchmarks/hw_queue", "--benchmark-json=x.json"], "the command holds --benchmark-json"),
    ],
)
def test_a_command_that_cannot_be_run_per_side_is_refused_before_any_run(cmd, words, tmp_path, capsys):
    with pytest.raises(AbError, match=words):
        check_command(cmd)
    assert main(["ab", "--a", "", "--b", "", "--out", str(tmp_path / "o"), "--", *cmd]) == 2
    assert words in capsys.readouterr().err and not (tmp_path / "o").exists()


def test_budget_with_a_fixed_number_of_pairs_is_refused(tmp_path, capsys):
    code = main(["ab", "--a", "", "--b", "", "--runs", "3", "--budget", "5m", "--", "benchmarks/hw_queue"])
    assert code == 2 and "--budget needs --runs auto" in capsys.readouterr().err


# The launcher check answered as a Python with torch and aorta and no GPU would, without importing torch (seconds
# per side). The real probe: tests/gate/test_launcher_check.py.
PROBE_ANSWER = "-c " + shlex.quote(
    "import json, sys; print('aorta-launcher-probe:', json.dumps({'python': sys.executable, "
    "'aorta': '/site-packages/aorta', 'torch': '2.13.0', 'hip': None, 'devices': []}))"
)


def probe_answered(path: Path, then: str) -> Path:
    """A side's "Python" at ``path`` that passes the launcher check (PROBE_ANSWER: no torch imported), then runs
    the shell line ``then``."""
    path.write_text(
        f'#!/bin/sh\nif [ "$1" = "-c" ]; then exec {sys.executable} {PROBE_ANSWER} "$@"; fi\n{then}\n'
    )
    path.chmod(0o755)
    return path


@pytest.mark.parametrize("b", ["answered", pytest.param("this_python", marks=pytest.mark.slow)])
def test_a_side_that_exits_0_without_its_json_ends_the_ab_with_exit_1_and_no_verdict(tmp_path, capsys, b):
    """Side B is never run: its launcher check is answered without torch in the fast tier (a second of imports),
    by this Python (``--b ''``) in the slow tier."""
    # A side's Python that passes the launcher check, then exits 0 and writes nothing (a wrapper that swallows
    # pytest's code)
    swallows = probe_answered(tmp_path / "swallows", "exit 0")
    b_side = str(probe_answered(tmp_path / "b_side", "exit 3")) if b == "answered" else ""
    out = tmp_path / "ab"
    code = main(
        ["ab", "--a", str(swallows), "--b", b_side, "--runs", "2", "--out", str(out), "--", "test_x.py"]
    )
    lines = capsys.readouterr().out.splitlines()
    assert code == 1
    assert "aorta ab: A check run: FAILED (exit 0, no JSON) in " in lines[1]
    assert lines[2:] == [
        f"aorta ab: A check run failed (exit 1): no verdict; its output: {out / 'Acheck.log'}",
        "aorta ab: exit 1",
    ]
    assert not (out / "verdict.json").exists() and not (out / "B1.log").exists()


# A side's "Python" that runs no benchmark: it writes, where --benchmark-json says, one run of benchmark `a`
# whose rounds take CENTER_MS (its environment's) with 0.2% of noise drawn from the pair's order seed.
FAKE_SIDE = textwrap.dedent(
    """
    import json, os, random, sys
    if "-c" in sys.argv:  # the launcher check, answered as PROBE_ANSWER does
        info = {"python": sys.executable, "aorta": "/site-packages/aorta", "torch": "2.13.0", "hip": None,
                "devices": []}
        print("aorta-launcher-probe:", json.dumps(info))
        sys.exit(0)
    args = dict(a.split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
    rng = random.Random(int(args.get("--aorta-order-seed", 0)) * 7 + len(os.environ.get("SIDE", "")))
    center = float(os.environ["CENTER_MS"]) * (1 + rng.gauss(0, 0.002))
    ms = [center * (1 + rng.gauss(0, 0.002)) for _ in range(20)]
    bench = {"fullname": "test_x.py::a", "name": "a", "stats": {"data": [m / 1e3 for m in ms]},
             "extra_info": {"aorta_schema": 1, "device_ms_per_iteration": ms}}
    machine = {"backend": "cpu", "gpu_name": None, "gpu_count": 0, "torch": "2.13.0", "env": {}}
    doc = {"machine_info": {"aorta": machine}, "benchmarks": [bench], "version": "5.2.3"}
    open(args["--benchmark-json"], "w").write(json.dumps(doc))
    """
)


@pytest.fixture
def fake_side(tmp_path, monkeypatch):
    script = tmp_path / "side.py"
    script.write_text(FAKE_SIDE)
    monkeypatch.setenv("CENTER_MS", "10")  # the parent's value: a side's own setting must win over it
    return f"{sys.executable} {script}"


def test_a_sides_settings_win_over_the_parents_environment(fake_side, tmp_path, capsys):
    out = tmp_path / "ab"
    args = ["--runs", "3", "--out", str(out), "--verdict-json", str(out / "verdict.json"), "--", "test_x.py"]
    code = main(["ab", "--a", f"SIDE=a {fake_side}", "--b", f"SIDE=b CENTER_MS=12 {fake_side}", *args])
    assert code == 10, capsys.readouterr().out
    (verdict,) = json.loads((out / "verdict.json").read_text())["comparisons"][0]["verdicts"]
    assert (verdict["metric"], verdict["outcome"]) == ("device_ms", "SLOWER")
    assert verdict["change_ratio"] == pytest.approx(0.2, abs=0.01)


def test_runs_auto_tests_each_look_at_alpha_shared_by_the_looks(fake_side, tmp_path, capsys):
    from aorta.gate.stats.sequential import LOOKS

    out = tmp_path / "ab"
    code = main(["ab", "--a", f"SIDE=a {fake_side}", "--b", f"SIDE=b {fake_side}", "--alpha", "0.05",
                 "--out", str(out), "--", "test_x.py"])  # fmt: skip
    text = capsys.readouterr().out
    assert code == 0, text
    (comp,) = json.loads((out / "verdict.json").read_text())["comparisons"]
    assert (comp["settings"]["looks"], comp["settings"]["look_alpha"]) == (len(LOOKS), pytest.approx(0.01))
    assert "aorta ab: look at 3 run(s)" in text


@pytest.mark.slow
def test_a_b_ten_times_slower_is_a_regression_from_alternating_fresh_runs(counted_work, monkeypatch, capsys):
    from test_gate_plugin import BASE_ARGS

    monkeypatch.chdir(counted_work.path)
    args = [a for a in BASE_ARGS if not a.startswith(("--aorta-runs", "--aorta-confirm", "--aorta-alpha"))]
    cmd = ["--", "test_spin.py", *args]
    # 3 pairs (df 4 for independent runs): a 10x change stays significant at alpha 0.01 up to about 50% noise
    # between runs, which a loaded 2-core machine reached (23% seen: at 2 pairs, df 2, that was exit 15)
    slow = main(["ab", "--a", "", "--b", "SPIN_US=10000", "--runs", "3", "--out", "ab", *cmd])
    text = capsys.readouterr().out
    assert slow == 10, text
    order = [
        line.split(":")[1].strip()
        for line in text.splitlines()
        if line.startswith("aorta ab: ") and ": ok in " in line
    ]
    assert order[:6] == [
        "A check run",  # the check pair: full runs, not samples (their workloads have checks apart)
        "B check run",
        "A run 1 (lean)",
        "B run 1 (lean)",
        "B run 2 (lean)",
        "A run 2 (lean)",
    ], text
    verdicts = json.loads((counted_work.path / "ab" / "verdict.json").read_text())["comparisons"][0][
        "verdicts"
    ]
    assert {(v["metric"], v["outcome"]) for v in verdicts} >= {("device_ms", "SLOWER")}


# A CPU run's records, as aorta writes them: every figure timed by the host clock. Nothing reads UNUSED_*, yet
# side B's processes landed in another mode (layout, clocks): 3% apart, 0.2% noise within each mode.
HOST_SIDE = FAKE_SIDE.replace(
    'center = float(os.environ["CENTER_MS"])',
    'center = float(os.environ["CENTER_MS"]) * (0.97 if "UNUSED_TWO" in os.environ else 1.0)',
).replace(
    '"extra_info": {"aorta_schema": 1,',
    '"extra_info": {"aorta_schema": 3, "clock": "host_clock", "backend": "cpu",',
)


def test_an_ab_that_differs_only_in_unused_settings_names_no_faster_host_figure_at_two_runs_a_side(
    tmp_path, monkeypatch, capsys
):
    """Issue 65, leftover 4: two runs a side of a figure timed on the host read a process mode as FASTER."""
    script = tmp_path / "side.py"
    script.write_text(HOST_SIDE)
    monkeypatch.setenv("CENTER_MS", "10")
    side = f"{sys.executable} {script}"
    out = tmp_path / "ab"
    code = main(["ab", "--a", f"UNUSED_ONE=1 {side}", "--b", f"UNUSED_TWO=2 {side}", "--runs", "2",
                 "--out", str(out), "--", "test_x.py"])  # fmt: skip
    text = capsys.readouterr().out
    (verdict,) = json.loads((out / "verdict.json").read_text())["comparisons"][0]["verdicts"]
    assert verdict["change_ratio"] == pytest.approx(-0.03, abs=0.01), text  # the mode is seen...
    assert verdict["outcome"] == "UNSURE", text  # ...and not called FASTER on 2 + 2 runs
    assert "measures the host" in verdict["reason"] and "needs 5" in verdict["reason"], verdict["reason"]
    assert code == 15, text  # inconclusive, never clean nor a verdict
