"""scripts/gate_projection.py: from runs with a known between-run noise, the figures a compare of N runs a side
could gate, by the gate's own MDE."""

from __future__ import annotations

import json
import math

from aorta.stats import noise
from scripts import gate_projection


def run_file(tmp_path, name, values):
    """One run (pytest-benchmark JSON as aorta writes it) with one figure per benchmark: ``values`` maps a
    benchmark to its device ms, one round."""
    doc = {
        "benchmarks": [
            {
                "fullname": f"t.py::{b}",
                "name": b,
                "stats": {"data": [v / 1e3]},
                "extra_info": {"device_ms_per_iteration": [v]},
            }
            for b, v in values.items()
        ]
    }
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


def test_a_quiet_figure_is_gateable_where_a_noisy_one_is_not(tmp_path, capsys):
    # quiet: +-0.1% between runs; noisy: +-20%
    runs = [run_file(tmp_path, f"r{i}.json", {"quiet": 10 * (1 + d / 1000), "noisy": 10 * (1 + d / 5)})
            for i, d in enumerate((-1, 0, 1))]  # fmt: skip
    assert gate_projection.main(["--group", *runs, "--runs", "3,20"]) == 0
    out = capsys.readouterr().out.splitlines()
    rows = {line.split("|")[0].strip(): line for line in out if "|" in line and line.strip()[0].isdigit()}
    assert rows["3"].split("|")[1].strip().startswith("1 ")  # the quiet one alone at 5%
    assert rows["20"].split("|")[1].strip().startswith("1 ")  # 20% noise is out of reach even at 20 a side
    # the projection is the gate's MDE: the quiet figure's sigma and N = 3 give the same answer directly
    sigma = noise.pooled_noise([10 * (1 + d / 1000) for d in (-1, 0, 1)]).sigma
    assert noise.mde(noise.Noise(sigma, 4, 3), 3, 3, alpha=0.002) < 0.02
    assert math.isfinite(sigma)
