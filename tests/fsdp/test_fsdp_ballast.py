"""--aorta-test-comm-ballast: a calibrated communication slowdown for proving the FSDP gate.

Pure pieces first (the ballast's size, what the record says, bad values refused), then one CPU run of the
baseline and DDP scenarios with ballast: FSDP all-gathers it (a DTensor after fully_shard), the loss check
still passes, the record marks the run as slowed on purpose, DDP says why it carries none, and such a run
is never saved as a baseline."""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

from aorta.fsdp.ballast import BALLAST_NAME, DDP_REASON, add_ballast
from aorta.fsdp.config import ConfigError, load_config
from aorta.fsdp.figures import _ballast_details
from aorta.fsdp.plugin import _parse_ballast

ROOT = Path(__file__).resolve().parents[2]


def _blocks():
    torch.manual_seed(0)
    return [nn.Linear(8, 4), nn.Sequential(nn.Linear(3, 5), nn.Linear(5, 7))]  # 36 and 20 + 42 = 62 params


def test_each_block_gets_a_frozen_ballast_of_ratio_times_its_parameters():
    blocks = _blocks()
    info = add_ballast(blocks, 0.5)
    assert info["ballast_elements_per_block"] == [18, 31]
    for block, n in zip(blocks, (18, 31)):
        b = getattr(block, BALLAST_NAME)
        assert b.numel() == n and not b.requires_grad and b.dtype == torch.float32
    # the blocks compute what they did: nothing reads the ballast
    x = torch.ones(2, 8)
    assert torch.equal(blocks[0](x), nn.functional.linear(x, blocks[0].weight, blocks[0].bias))
    with pytest.raises(ValueError, match="ratio must be > 0"):
        add_ballast(_blocks(), 0.0)


def test_the_record_marks_a_ballast_run_and_says_why_ddp_has_none():
    unavailable: dict = {}
    info = {"kind": "comm_ballast", "ratio": 0.5, "ballast_elements_per_block": [18]}
    assert _ballast_details(info, unavailable) == {"test_slowdown": 0.5, "test_slowdown_info": info}
    assert unavailable == {}
    assert _ballast_details({"unavailable": DDP_REASON}, unavailable) == {}
    assert unavailable == {"test_comm_ballast": DDP_REASON}
    assert _ballast_details(None, unavailable) == {}


@pytest.mark.parametrize("value", ["-0.1", "8.5"])
def test_a_ballast_out_of_range_is_refused_naming_the_key(value):
    with pytest.raises(
        ConfigError, match=rf"fsdp.test_comm_ballast={float(value)!r}: allowed 0 \(none\) to 8"
    ):
        load_config(None, [f"fsdp.test_comm_ballast={value}"], smoke=True)


def _pytest(*args, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "benchmarks/fsdp",
        "-p",
        "no:cacheprovider",
        "--aorta-device",
        "cpu",
    ]
    cmd += [f"--aorta-artifacts={tmp_path / 'art'}", *args]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("value, why", [("0", "must be above 0"), ("9", "at most 8"), ("x", "not a number")])
def test_the_option_refuses_bad_values(value, why):
    with pytest.raises(argparse.ArgumentTypeError, match=why) as exc:
        _parse_ballast(value)
    assert f"--aorta-test-comm-ballast={value!r}" in str(exc.value)


def test_a_bad_value_stops_a_pytest_of_this_process_before_anything_runs(pytester):
    """The option as aorta's FSDP plugin parses it in any pytest session: here one in this process."""
    pytester.makepyfile("def test_x():\n    raise AssertionError('ran')\n")
    r = pytester.runpytest("-p", "no:cacheprovider", "--aorta-test-comm-ballast=0")
    assert r.ret == 4 and "--aorta-test-comm-ballast='0'" in r.stderr.str(), r.stdout.str()[-2000:]


@pytest.mark.slow  # the FSDP suite's own pytest child; the option's parsing: the test above, in process
def test_a_bad_value_stops_pytest_before_anything_runs(tmp_path):
    proc = _pytest("--aorta-test-comm-ballast=0", "-k", "baseline", tmp_path=tmp_path)
    assert proc.returncode == 4 and "--aorta-test-comm-ballast='0'" in proc.stderr, proc.stdout[-2000:]


@pytest.mark.slow
def test_a_cpu_run_with_ballast_all_gathers_it_and_is_marked(tmp_path):
    out = tmp_path / "b.json"
    proc = _pytest(
        "-k", "baseline or ddp", "--aorta-test-comm-ballast=0.5", f"--benchmark-json={out}", tmp_path=tmp_path
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    by = {b["name"]: b["extra_info"] for b in json.loads(out.read_text())["benchmarks"]}
    fsdp, ddp = by["test_fsdp_scenario[baseline]"], by["test_fsdp_scenario[ddp]"]
    assert fsdp["test_slowdown"] == 0.5
    info = fsdp["test_slowdown_info"]
    assert info["kind"] == "comm_ballast" and info["all_gathered"] is True
    assert len(info["ballast_elements_per_block"]) >= 1 and min(info["ballast_elements_per_block"]) > 0
    assert "test_slowdown" not in ddp and ddp["unavailable"]["test_comm_ballast"] == DDP_REASON
    saved = _pytest(
        "-k",
        "baseline",
        "--aorta-test-comm-ballast=0.5",
        "--aorta-save-baseline=x",
        f"--aorta-baseline-dir={tmp_path / 'bl'}",
        tmp_path=tmp_path,
    )
    assert saved.returncode == 4 and "can never be saved as a baseline" in saved.stderr
    assert not (tmp_path / "bl").exists()
