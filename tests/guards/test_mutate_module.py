"""scripts/mutate_module.py (docs/mutation_testing.md): the ``[tool.mutmut]`` it writes mutates the one module
against the tests named, the rest of pyproject.toml kept; mutmut's results are read by status; bad input is
refused naming it before anything is copied."""

import importlib.util
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("mutate_module", ROOT / "scripts" / "mutate_module.py")
mm = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("mutate_module", mm)
_spec.loader.exec_module(mm)


def test_the_config_mutates_the_one_module_against_the_tests_named_and_keeps_the_rest():
    pyproject = (ROOT / "pyproject.toml").read_text()
    out = tomllib.loads(mm.with_config(pyproject, mm.mutmut_config("aorta/x.py", ["tests/a.py", "tests/b"])))
    cfg = out["tool"]["mutmut"]
    assert cfg["only_mutate"] == ["aorta/x.py"]
    assert cfg["pytest_add_cli_args_test_selection"] == ["tests/a.py", "tests/b"]
    assert cfg["pytest_add_cli_args"][:2] == ["-m", "not slow"]
    assert out["project"] == tomllib.loads(pyproject)["project"]  # the rest as it was
    assert out["tool"]["ruff"] == tomllib.loads(pyproject)["tool"]["ruff"]


def test_mutmuts_results_are_read_by_status():
    text = "    aorta.m.x_f__mutmut_1: killed\n    aorta.m.x_f__mutmut_2: survived\nsomething else\n"
    assert mm.parse_results(text) == {"aorta.m.x_f__mutmut_1": "killed", "aorta.m.x_f__mutmut_2": "survived"}


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["aorta/nope.py", "tests"], "module 'aorta/nope.py': no such file"),
        (["aorta/gate/runs/blocks.py", "tests/nope.py"], "test 'tests/nope.py': no such file or folder"),
        (["aorta/gate/runs/blocks.py", "tests", "--minutes", "0"], "--minutes=0.0: give more than 0"),
    ],
)
def test_bad_input_is_refused_naming_it(argv, said, capsys):
    with pytest.raises(SystemExit) as exc:
        mm.main(argv)
    assert exc.value.code == 2 and said in capsys.readouterr().err
