"""``aorta list``: every workload with category, priority, stream range and description; unknown names error."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from aorta import cli
from aorta.hw_queue.workloads import REGISTRY
from aorta.options import parse_copy_mb

REPO = Path(__file__).resolve().parents[2]


def test_list_prints_every_workload(capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["workload", "category", "priority", "streams", "recommended", "description"]
    rows = {line.split()[0]: line for line in out[2:]}
    assert set(rows) == set(REGISTRY)
    rag = rows["rag_pipeline"].split()
    assert rag[1:5] == ["inference", "p2", "1-64", "1,4,16"]
    assert "queries/s" in rows["rag_pipeline"]


def test_list_filters_by_name_in_the_order_asked(capsys):
    assert cli.main(["list", "zero_offload", "rag_pipeline"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in out[2:]] == ["zero_offload", "rag_pipeline"]


def test_unknown_name_lists_the_valid_ones(capsys):
    assert cli.main(["list", "rag_pipeline", "no_such_workload"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "unknown workload 'no_such_workload'; valid names: " + ", ".join(sorted(REGISTRY)) in captured.err


@pytest.mark.slow  # a Python subprocess that imports torch
def test_python_dash_m_aorta_list():
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [sys.executable, "-m", "aorta", "list", "copy_compute_overlap"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "copy_compute_overlap  memory" in proc.stdout


@pytest.mark.parametrize(
    "text,message",
    [
        ("0", "--aorta-copy-mb='0': out of range; allowed more than 0 and at most 65536 MiB"),
        ("-4", "out of range"),
        ("1e9", "out of range"),
        ("nan", "out of range"),
        ("lots", "--aorta-copy-mb='lots': not a number"),
    ],
)
def test_copy_mb_rejects_bad_values(text, message):
    import argparse

    with pytest.raises(argparse.ArgumentTypeError, match=message.replace("(", r"\(")):
        parse_copy_mb(text)


def test_copy_mb_accepts_fractions():
    assert parse_copy_mb("0.5") == 0.5 and parse_copy_mb("64") == 64.0


@pytest.mark.slow  # a pytest subprocess
def test_copy_mb_zero_is_a_usage_error(run_pytest, pytester):
    pytester.makepyfile(test_never="def test_never():\n    raise AssertionError('must not run')\n")
    result = run_pytest("--aorta-copy-mb=0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        "--aorta-copy-mb='0': out of range; allowed more than 0 and at most 65536 MiB" in result.stderr.str()
    )
    assert "must not run" not in result.stdout.str()
