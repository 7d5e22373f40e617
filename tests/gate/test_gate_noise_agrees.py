"""``aorta noise`` and the save line agree on which figures of one baseline are gateable (issue 38, case 24):
both plan the compare's degrees of freedom (baseline and candidate runs pooled); the save line planned with
the baseline's alone and called fewer figures gateable."""

import json

from test_gate_offline import bench, run

from aorta.cli import main
from aorta.gate.baselines import baseline as bl
from aorta.gate.comparison.compare import GateSettings


def test_the_saved_profile_and_aorta_noise_call_the_same_figures_gateable(tmp_path, capsys):
    # three runs of one stack: an A/A whose noise both read
    for seed, centre in enumerate((10.0, 10.18, 9.86)):
        path, _ = bl.save_baseline(
            run([bench("a", centre, seed=seed)]), tmp_path, "base", {}, settings=GateSettings(max_mde=0.05)
        )
    profile = json.loads(path.read_text())["aorta_baseline"]["noise_profile"]
    saved = profile["figures"][next(iter(profile["figures"]))]["device_ms"]
    assert main(["noise", str(path), "--json", str(tmp_path / "noise.json")]) == 0
    capsys.readouterr()
    row = next(
        r for r in json.loads((tmp_path / "noise.json").read_text())["rows"] if r["figure"] == "device_ms"
    )
    assert row["mde"] == saved["mde"] and row["gateable"] == saved["gateable"]


def test_the_noise_summary_says_when_it_counts_device_time_only(tmp_path, capsys):
    for seed, centre in enumerate((10.0, 10.1)):
        path, _ = bl.save_baseline(run([bench("a", centre, seed=seed)]), tmp_path, "base", {})
    assert main(["noise", str(path)]) == 0
    assert (
        "; device time only: --all-figures for every figure, as the save line counts"
        in capsys.readouterr().out
    )
    assert main(["noise", str(path), "--all-figures"]) == 0
    assert "device time only" not in capsys.readouterr().out
