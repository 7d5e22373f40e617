"""What a stored baseline may hold, checked before it is used (issue 38, cases 3 and 14): a baseline written by
a newer aorta (a higher schema) is neither saved onto (which would rewrite it in the old schema and drop its new
fields) nor compared with, naming both versions; a sample too large for any measurement (1e308, which passed
the finiteness check and then overflowed in the statistics after the whole run) is refused naming the field."""

import json

import pytest
from test_gate_offline import bench, run

from aorta import __version__
from aorta.cli import main
from aorta.exit_codes import EXIT_USAGE
from aorta.gate.baselines import baseline as bl
from aorta.gate.stats.schema import BASELINE_SCHEMA


@pytest.fixture
def newer(tmp_path):
    path, _ = bl.save_baseline(run([bench("a", 10.0)]), tmp_path, "base", {})
    doc = json.loads(path.read_text())
    doc["aorta_baseline"]["schema"] = BASELINE_SCHEMA + 1
    doc["aorta_baseline"]["a_field_of_the_newer_aorta"] = {"kept": True}
    path.write_text(json.dumps(doc))
    return path


def why_newer(path) -> str:
    return (
        f"{path}: saved by a newer aorta (baseline schema {BASELINE_SCHEMA + 1}; this aorta {__version__} reads "
        f"schema {BASELINE_SCHEMA} at most): upgrade aorta to use it"
    )


def test_a_newer_aortas_baseline_is_not_saved_onto(tmp_path, newer):
    before = newer.read_bytes()
    with pytest.raises(bl.BaselineError) as exc:
        bl.save_baseline(run([bench("a", 10.0, seed=2)]), tmp_path, "base", {})
    assert str(exc.value).startswith(why_newer(newer))
    assert newer.read_bytes() == before


def test_a_newer_aortas_baseline_is_not_compared_with(tmp_path, newer, capsys):
    cand = tmp_path / "cand.json"
    cand.write_text(json.dumps(run([bench("a", 10.0, seed=2)])))
    assert main(["compare", str(newer), str(cand), "--verdict-json", ""]) == EXIT_USAGE
    assert why_newer(newer) in capsys.readouterr().err


def test_a_sample_too_large_for_any_measurement_is_refused_before_any_verdict(tmp_path, capsys):
    path, _ = bl.save_baseline(run([bench("a", 10.0)]), tmp_path, "base", {})
    doc = json.loads(path.read_text())
    stored = doc["aorta_baseline"]["runs"][0]["benchmarks"]
    name = next(iter(stored))
    stored[name]["device_ms"][1] = 1e308
    path.write_text(json.dumps(doc))
    cand = tmp_path / "cand.json"
    cand.write_text(json.dumps(run([bench("a", 10.0, seed=2)])))
    assert main(["compare", str(path), str(cand), "--verdict-json", ""]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert f".benchmarks[{name!r}].device_ms: 1e+308 is out of the range a measurement can take" in err
    assert "Traceback" not in err
