"""scripts/offline_aa.py: groups of measured runs judged against each other by `aorta compare`, each ordered
pair once; a group of one stack against another of the same stack is an A/A, and a real change is not one."""

import io
import json
import subprocess
import sys
import types
from contextlib import redirect_stderr, redirect_stdout

import pytest
from test_gate_noise_cli import _run_doc

from aorta.cli import main
from scripts import offline_aa


def _run(path, seed: int, values_ms: dict[str, float]) -> str:
    """One lean sample run of block ``seed``: each benchmark's ten rounds at its value."""
    doc = {
        **_run_doc(values_ms),
        "aorta_run": {"seed": seed, "kind": "lean", "selection": "all", "sample": True},
    }
    path.write_text(json.dumps(doc))
    return str(path)


def _group(tmp_path, name: str, scale: float) -> list[str]:
    # five blocks; block k runs a little slower or faster in every group (what pairing takes out)
    return [
        _run(tmp_path / f"{name}{k}.json", k, {"gemm": 10.0 * scale * (1 + d), "copy": 2.0 * (1 + d)})
        for k, d in enumerate((0.004, -0.003, 0.001, -0.002, 0.0005), start=1)
    ]


def _aorta_in_this_process(cmd: list[str], **_) -> subprocess.CompletedProcess:
    """``python -m aorta ARGS`` as the script runs it, run here by ``aorta.cli.main``: its code and output, without
    a second of Python, torch and scipy start-up for each of the six compares."""
    assert cmd[:3] == [sys.executable, "-m", "aorta"], cmd
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(cmd[3:])
        except SystemExit as exc:  # argparse's own exit
            code = exc.code if isinstance(exc.code, int) else 1
    return subprocess.CompletedProcess(cmd, code, out.getvalue(), err.getvalue())


@pytest.mark.parametrize(
    "compare", ["in_process", pytest.param("subprocess", marks=pytest.mark.slow)]
)  # the script's own `python -m aorta compare` children in the slow tier
def test_groups_of_one_stack_are_an_a_a_and_a_slower_group_is_caught(tmp_path, capsys, monkeypatch, compare):
    if compare == "in_process":
        monkeypatch.setattr(offline_aa, "subprocess", types.SimpleNamespace(run=_aorta_in_this_process))
    a, b = _group(tmp_path, "a", 1.0), _group(tmp_path, "b", 1.0)
    slow = _group(tmp_path, "slow", 1.10)
    assert offline_aa.main(["--group", "a", *a, "--group", "b", *b, "--group", "slow", *slow]) == 0
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in capsys.readouterr().out.splitlines()]
    rows = {(c[0], c[1]): c[2:] for c in cells if len(c) > 2 and c[2].isdigit()}
    assert set(rows) == {(r, c) for r in ("a", "b", "slow") for c in ("a", "b", "slow") if r != c}
    assert rows[("a", "b")][:2] == ["0", "0"] and rows[("b", "a")][:2] == ["0", "0"]  # exit 0, no alarm
    assert rows[("a", "slow")][:2] == ["10", "1"]  # gemm 10% slower: SLOWER, exit 10
    assert rows[("slow", "a")][:2] == ["0", "1"]  # the same change seen the other way: FASTER (exit 0)
    assert rows[("a", "b")][4] == "5"  # five pairs: blocks matched by seed
