"""Sweep inputs refused before any work, with a sentence (issue 24: cases 9, 10, 11): an ``--override`` on a
command that reads no FSDP configuration, the documented ``profiling.trace=on`` (YAML reads ``on`` as true),
and a manifest with damaged fields under ``aorta report --sweep``."""

import json
import shutil
from pathlib import Path

import pytest

from aorta.cli import main
from aorta.fsdp.config import ConfigError, load_config

REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parents[1] / "data" / "sweeps"


# ------------------------------------------------------------------------------ 9. an override nobody reads
def test_an_override_on_a_hardware_queue_command_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    out = tmp_path / "sw"
    code = main(
        [
            "sweep",
            "--override",
            "training.steps=2,4",
            "--output",
            str(out),
            "--",
            "pytest",
            "benchmarks/hw_queue",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2, err
    assert (
        "--override training.steps: the command runs benchmarks/hw_queue, which reads no FSDP configuration"
        in err
    )
    assert not out.exists()


@pytest.mark.parametrize(
    "target", ["benchmarks/fsdp", "benchmarks", "benchmarks/fsdp/test_fsdp_scenarios.py::test_x"]
)
def test_an_override_on_an_fsdp_command_is_accepted(target, monkeypatch):
    from aorta.sweep.command import check_override_readers
    from aorta.sweep.grid import parse_axes

    monkeypatch.chdir(REPO)
    axes = parse_axes([], ["training.steps=2,4"])
    check_override_readers(axes, ["torchrun", "--nproc_per_node", "2", "-m", "pytest", target])
    check_override_readers(axes, ["pytest", "-k", "baseline"])  # no path: pytest's testpaths
    check_override_readers(axes, ["scripts/launch_cuda.sh"])


# ------------------------------------------------------------------------------ 10. profiling.trace=on
@pytest.mark.parametrize("text, value", [("on", "on"), ("off", "off"), ("auto", "auto"), ("true", "on")])
def test_the_documented_trace_values_are_accepted(text, value):
    assert load_config(None, [f"profiling.trace={text}"]).profiling.trace == value


@pytest.mark.parametrize("text", ["3", "maybe"])
def test_a_bad_trace_value_names_the_allowed_ones(text):
    with pytest.raises(ConfigError, match=r"profiling.trace=.*: allowed values are auto, on, off"):
        load_config(None, [f"profiling.trace={text}"])


def test_a_sweep_over_trace_on_and_off_is_accepted():
    from aorta.sweep.command import check_overrides
    from aorta.sweep.grid import parse_axes

    check_overrides(parse_axes([], ["profiling.trace=on,off"]), ["pytest", "benchmarks/fsdp"])


# ------------------------------------------------------------------------------ 11. damaged manifest fields
DAMAGE = {
    "cell_status_number": (
        lambda d: d["cells"][0].update(status=5),
        "cells[0].status: 5, allowed ok, failed",
    ),
    "cell_id_missing": (lambda d: d["cells"][1].pop("id"), "cells[1].id: None, expected text"),
    "grid_not_list": (lambda d: d.update(grid={"x": 1}), "grid: {'x': 1}, expected a list of axes"),
    "axis_values_number": (lambda d: d["grid"][0].update(values=7), "grid[0]: "),
    "env_list": (lambda d: d["cells"][2].update(env=["a"]), "cells[2].env: ['a'], expected a mapping"),
    "json_path_number": (lambda d: d["cells"][0].update(benchmark_json=3), "cells[0].benchmark_json: 3"),
    "command_string": (lambda d: d.update(command="pytest"), "command: 'pytest', expected a list of text"),
    "cell_not_mapping": (lambda d: d["cells"].__setitem__(0, "x"), "cells[0]: 'x', expected a mapping"),
}


@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_report_over_a_manifest_with_a_damaged_field_exits_2_naming_it(tmp_path, capsys, kind):
    folder = tmp_path / "stack_a"
    shutil.copytree(DATA / "stack_a", folder)
    doc = json.loads((folder / "sweep.json").read_text())
    spoil, words = DAMAGE[kind]
    spoil(doc)
    (folder / "sweep.json").write_text(json.dumps(doc))
    code = main(["report", "--sweep", str(folder), "--output", str(tmp_path / "rep")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"--sweep {folder}: {folder / 'sweep.json'}: damaged sweep manifest: " in err
    assert words in err and "Traceback" not in err
    assert not (tmp_path / "rep").exists()


def test_resuming_into_a_folder_of_another_label_is_refused_naming_it(tmp_path):
    from aorta.sweep.grid import SweepUsageError
    from aorta.sweep.manifest import check_same_sweep

    old = {"label": "rocm-7.0.8", "grid": [], "command": ["pytest"], "base_env": {}}
    with pytest.raises(SweepUsageError, match='label: was "rocm-7.0.8", now "rocm-7.0.10"'):
        check_same_sweep(old, old | {"label": "rocm-7.0.10"}, tmp_path)
    check_same_sweep(old, dict(old), tmp_path)  # the same sweep resumes
