"""``aorta ab``: two launchers on one machine, alternating fresh processes, B judged against A."""

import json
import sys

import pytest

from aorta.cli import main
from aorta.gate.ab import AbError, check_command, pair_order, parse_launcher, run_command

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
    tail = ["--benchmark-json=/o/B2.json", "--aorta-order-seed=2", "--aorta-lean-run"]
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


@pytest.mark.slow
def test_a_b_ten_times_slower_is_a_regression_from_alternating_fresh_runs(bench_dir, monkeypatch, capsys):
    from test_gate_plugin import BASE_ARGS

    monkeypatch.chdir(bench_dir.path)
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
    verdicts = json.loads((bench_dir.path / "ab" / "verdict.json").read_text())["comparisons"][0]["verdicts"]
    assert {(v["metric"], v["outcome"]) for v in verdicts} >= {("device_ms", "SLOWER")}
