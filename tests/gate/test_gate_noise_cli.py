"""``aorta noise``: the noise profile of saved runs, each number checked by hand (pure: no torch)."""

import json
import math
from pathlib import Path

import pytest
from scipy import stats as sps

from aorta.cli import main
from aorta.gate.noise_cli import profile_rows


def _run_doc(values_ms: dict[str, float]) -> dict:
    """One run: each benchmark's ten rounds all at its value (so the run's figure is exactly it)."""
    return {
        "machine_info": {"aorta": {"backend": "cuda", "gpu_name": "NVIDIA H100 80GB HBM3", "gpu_count": 1}},
        "version": "5.2.3",
        "benchmarks": [
            {
                "fullname": f"benchmarks/hw_queue/test_x.py::{name}",
                "name": name,
                "extra_info": {"aorta_schema": 3, "device_ms_per_iteration": [v] * 10},
                "stats": {},
            }
            for name, v in values_ms.items()
        ],
    }


# steady: four runs about 0.2% apart; noisy: 8% apart
STEADY, NOISY = [10.0, 10.02, 9.98, 10.01], [5.0, 5.4, 4.7, 5.2]


def _files(tmp_path):
    paths = []
    for i, (s, n) in enumerate(zip(STEADY, NOISY)):
        p = tmp_path / f"run{i}.json"
        p.write_text(json.dumps(_run_doc({"steady": s, "noisy": n})))
        paths.append(str(p))
    return paths


def _expected_mde(values, m, n, alpha=0.01, power=0.95):
    sigma = math.sqrt(sum((math.log(v) - sum(map(math.log, values)) / len(values)) ** 2 for v in values) / 3)
    df = m + n - 2
    k = sps.t.ppf(1 - alpha / 2, df) + sps.t.ppf(power, df)
    return sigma, math.expm1(k * sigma * math.sqrt(1 / m + 1 / n))


def test_rows_give_noise_and_mde_of_the_planned_compare():
    runs = [
        {f"b::{k}": {"device_ms": [v] * 10} for k, v in (("steady", s), ("noisy", n))}
        for s, n in zip(STEADY, NOISY)
    ]
    rows = {
        r["benchmark"]: r
        for r in profile_rows(runs, baseline_n=6, candidate_n=3, alpha=0.01, max_mde=0.05, all_figures=False)
    }
    sigma, want = _expected_mde(STEADY, 6, 3)
    assert math.isclose(rows["b::steady"]["sigma_log"], sigma, rel_tol=1e-9)
    assert math.isclose(rows["b::steady"]["mde"], want, rel_tol=1e-9) and rows["b::steady"]["gateable"]
    sigma_n, want_n = _expected_mde(NOISY, 6, 3)
    assert math.isclose(rows["b::noisy"]["mde"], want_n, rel_tol=1e-9) and want_n > 0.05
    assert rows["b::noisy"]["gateable"] is False and rows["b::noisy"]["reason"].startswith("MDE ")
    # with fewer runs planned the same noise gives a larger MDE
    fewer = profile_rows(runs, baseline_n=3, candidate_n=2, alpha=0.01, max_mde=0.05, all_figures=False)
    assert next(r for r in fewer if r["benchmark"] == "b::steady")["mde"] > want


def test_command_prints_the_table_and_counts_what_is_gateable(tmp_path, capsys):
    out = tmp_path / "profile.json"
    assert main(["noise", *_files(tmp_path), "--baseline-runs", "6", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    _, want = _expected_mde(STEADY, 6, 3)
    line = next(ln for ln in text.splitlines() if ln.startswith("steady"))
    assert f"{want * 100:.1f}%" in line and line.rstrip().endswith("yes")
    assert "no: MDE" in next(ln for ln in text.splitlines() if ln.startswith("noisy"))
    assert "4 runs; 1 of 2 figures gateable at MDE <= 5% with 6 baseline and 3 candidate runs" in text
    doc = json.loads(out.read_text())
    assert doc["baseline_runs"] == 6 and len(doc["rows"]) == 2


def test_one_run_or_a_bad_option_is_refused(tmp_path, capsys):
    one = _files(tmp_path)[:1]
    assert main(["noise", *one]) == 2
    assert "1 run in" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["noise", *one, "--baseline-runs", "1"])
    assert exc.value.code == 2
    assert "--baseline-runs='1': out of range" in capsys.readouterr().err


def test_a_not_gateable_benchmark_is_printed_with_its_runs_reading_note(tmp_path, capsys):
    paths = _files(tmp_path)
    host_bound = "host-bound: GPU busy 3% of the round; the host's launch path is what is measured"
    for path in paths:  # both benchmarks carry a note; only the one that is not gateable is explained by it
        doc = json.loads(open(path).read())
        for b in doc["benchmarks"]:
            b["extra_info"]["reading_notes"] = [host_bound if b["name"] == "noisy" else "GPU idle: busy 80%"]
        open(path, "w").write(json.dumps(doc))
    out = tmp_path / "profile.json"
    assert main(["noise", *paths, "--baseline-runs", "6", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert f"why some may be noisy (the runs' own reading notes):\n  noisy: {host_bound}\n" in text
    assert "GPU idle" not in text
    rows = {r["benchmark"].split("::")[-1]: r for r in json.loads(out.read_text())["rows"]}
    assert rows["noisy"]["reading_note"] == host_bound and "reading_note" not in rows["steady"]


def test_runs_of_several_machines_are_said_to_include_the_machines_differences(tmp_path, capsys):
    paths = _files(tmp_path)
    assert main(["noise", *paths]) == 0
    assert "machines" not in capsys.readouterr().out  # one machine (none named): nothing to say
    for i, p in enumerate(map(Path, paths)):
        doc = json.loads(p.read_text())
        doc["machine_info"]["aorta"]["gpu_uuid"] = f"GPU-{i % 2}"
        p.write_text(json.dumps(doc))
    out = tmp_path / "profile.json"
    assert main(["noise", *paths, "--json", str(out)]) == 0
    assert "the runs come from 2 machines: the noise above includes how far machines differ" in (
        capsys.readouterr().out
    )
    assert json.loads(out.read_text())["machines"] == 2
