"""An output never replaces an input (issue 38, case 1): ``--benchmark-json``, ``--aorta-verdict-json`` or
``--aorta-markdown`` naming the baseline, and ``aorta compare --verdict-json`` / ``--markdown`` naming the
baseline or a candidate file, are refused before any work with a sentence naming the option, the path and the
input; the input is left byte for byte."""

import json

import pytest
from test_gate_bad_input import nothing_ran
from test_gate_offline import bench, run
from test_gate_plugin import run as run_pytest
from test_gate_plugin import saved

from aorta.cli import main
from aorta.exit_codes import EXIT_USAGE
from aorta.gate.baselines import baseline as bl
from aorta.record.output_paths import OutputPathError, check_not_an_input

USAGE = pytest.ExitCode.USAGE_ERROR


def test_the_same_file_through_another_spelling_or_a_link_is_an_input(tmp_path, monkeypatch):
    f = tmp_path / "base.json"
    f.write_text("{}")
    (tmp_path / "link.json").symlink_to(f)
    monkeypatch.chdir(tmp_path)
    for spelling in ("base.json", "./base.json", str(tmp_path / "link.json")):
        with pytest.raises(OutputPathError, match=r"--out .*: is the baseline \(.*base.json\), an input"):
            check_not_an_input("--out", spelling, {"the baseline": f})
    check_not_an_input("--out", tmp_path / "other.json", {"the baseline": f})  # another file is fine


@pytest.mark.parametrize("option", ["--verdict-json", "--markdown"])
@pytest.mark.parametrize("which", ["ref", "cand"])
def test_aorta_compare_refuses_an_output_that_is_its_baseline_or_a_candidate(tmp_path, capsys, option, which):
    ref, cand = tmp_path / "ref.json", tmp_path / "cand.json"
    bl.save_baseline(run([bench("a", 10.0)]), tmp_path, "b", {})
    ref.write_text(json.dumps(run([bench("a", 10.0)])))
    cand.write_text(json.dumps(run([bench("a", 10.0, seed=2)])))
    target = ref if which == "ref" else cand
    before = target.read_bytes()
    assert main(["compare", str(ref), str(cand), option, str(target)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert f"aorta compare: error: {option} {target}: is the " in err
    assert "an input of this run; writing there would replace what is stored in it" in err
    assert target.read_bytes() == before


@pytest.mark.parametrize("option", ["--benchmark-json", "--aorta-verdict-json", "--aorta-markdown"])
def test_pytest_refuses_an_output_that_is_the_baseline_it_compares_with(bench_dir, monkeypatch, option):
    path = saved(bench_dir, monkeypatch)
    before = path.read_bytes()
    r = run_pytest(bench_dir, "--aorta-compare", str(path), f"{option}={path}")
    assert r.ret == USAGE and nothing_ran(r)
    r.stderr.fnmatch_lines([f"*{option} {path}: is the baseline compared with (--aorta-compare)*"])
    assert path.read_bytes() == before


def test_pytest_refuses_a_benchmark_json_that_is_the_baseline_it_saves_to(bench_dir, monkeypatch):
    path = saved(bench_dir, monkeypatch)
    before = path.read_bytes()
    r = run_pytest(bench_dir, "--aorta-save-baseline", "base", f"--benchmark-json={path}")
    assert r.ret == USAGE and nothing_ran(r)
    r.stderr.fnmatch_lines([f"*--benchmark-json {path}: *baseline*"])
    assert path.read_bytes() == before
