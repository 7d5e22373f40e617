"""``aorta ab``'s launcher check, piece by piece and word for word (aorta/gate/runs/launcher_check.py, issue 58):
which folders are this checkout, which ``PYTHONPATH`` entries the probe loses, how each kind of bad answer is
refused (a Python that fails, one that lacks torch or aorta, a program that is no Python, an unreadable
answer), which of several answers is read, and when two sides see the same devices. In this process, no side
started: ``tests/gate/test_launcher_check.py`` runs real launchers through ``aorta ab``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import aorta
from aorta.gate.runs import launcher_check as lc

REPO = Path(__file__).resolve().parents[2]


def answer(**over) -> str:
    info = {"python": "/v/bin/python", "aorta": "/v/aorta", "torch": "2.9.0", "hip": "7.1", "devices": ["X"]}
    info.update(over)
    return f"{lc.MARKER} {json.dumps(info)}"


# ------------------------------------------------------------------------------------------ the checkout
def test_the_checkout_is_the_working_folder_then_the_folder_above_the_imported_aorta(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert lc.checkout_roots() == [tmp_path.resolve(), Path(aorta.__file__).resolve().parents[1]]


@pytest.mark.parametrize("installed", ["site-packages", "dist-packages"])
def test_an_installed_aorta_is_no_checkout(tmp_path, monkeypatch, installed):
    package = tmp_path / "lib" / installed / "aorta"
    package.mkdir(parents=True)
    monkeypatch.setattr(aorta, "__file__", str(package / "__init__.py"))
    monkeypatch.chdir(tmp_path)
    assert lc.checkout_roots() == [tmp_path.resolve()]


def test_the_probe_loses_only_the_checkout_s_entries_and_empty_ones_and_the_side_s_settings_win(tmp_path):
    root = tmp_path / "checkout"
    (root / "sub").mkdir(parents=True)
    beside = tmp_path / "checkout-other"  # shares the checkout's name as a prefix: not inside it
    parent = {
        "PYTHONPATH": os.pathsep.join(["", str(root), str(root / "sub"), str(beside), "", "/opt/lib"]),
        "HOME": "/h",
        "KEEP": "parent",
    }
    env = lc.probe_env(parent, {"KEEP": "side", "NEW": "1"}, [root])
    assert env == {
        "PYTHONPATH": os.pathsep.join([str(beside), "/opt/lib"]),
        "HOME": "/h",
        "KEEP": "side",
        "NEW": "1",
    }
    assert parent["PYTHONPATH"].startswith(os.pathsep)  # the parent's own environment untouched
    assert lc.probe_env({"HOME": "/h"}, {}, [root]) == {"HOME": "/h"}  # none set: none made up


def test_any_of_several_roots_holds_an_entry(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    assert lc._inside(str(b / "x"), [a, b]) and lc._inside(str(a), [a, b])
    assert not lc._inside(str(tmp_path), [a, b])


# ----------------------------------------------------------------------------------- reading the answer
def test_the_answer_is_read_field_by_field_from_the_last_probe_line():
    said = "\n".join(["noise", answer(devices=["old"]), "more", answer(devices=["A", "B"], hip=None), ""])
    probe = lc.read_probe("--b", "x", ["x"], 0, said)
    assert probe == lc.Probe(
        python="/v/bin/python", aorta="/v/aorta", torch="2.9.0", hip=None, devices=("A", "B")
    )
    assert lc.read_probe("--b", "x", ["x"], 0, answer()).hip == "7.1"
    no_hip = json.loads(answer().split(" ", 1)[1])
    del no_hip["hip"]  # an older probe: hip is optional
    assert lc.read_probe("--b", "x", ["x"], 0, f"{lc.MARKER} {json.dumps(no_hip)}").hip is None


def test_a_probe_line_must_start_the_line():
    with pytest.raises(lc.LauncherRefused, match="is not a Python"):
        lc.read_probe("--b", "x", ["x"], 0, "said " + answer())


@pytest.mark.parametrize(
    ("said", "why"),
    [
        (answer(devices=None), "'NoneType' object is not iterable"),
        (f"{lc.MARKER} {{}}", "'python'"),
        (answer().replace('"devices"', '"gpus"'), "'devices'"),
    ],
    ids=["devices-null", "empty", "no-devices"],
)
def test_an_answer_missing_a_field_or_of_the_wrong_kind_is_unreadable(said, why):
    with pytest.raises(lc.LauncherRefused) as exc:
        lc.read_probe("--b", "docker run img python", ["docker", "run", "img", "python"], 0, said)
    assert str(exc.value) == (
        f"--b='docker run img python': docker run img python answered the check unreadably ({why})"
    )


def test_a_program_that_prints_something_else_is_named_with_its_first_line_cut_at_80():
    long = "y" * 100
    with pytest.raises(lc.LauncherRefused) as exc:
        lc.read_probe("--a", "/bin/yes -x", ["/bin/yes", "-x"], 0, f"\n  {long}\nsecond\n")
    assert str(exc.value) == (
        f"--a='/bin/yes -x': /bin/yes -x is not a Python that runs 'python -c CODE' (it printed {'y' * 80!r}, exit 0): "
        "give a Python command, e.g. /opt/venv/bin/python or 'docker run ... IMAGE python'"
    )


@pytest.mark.parametrize("said", ["", None, "\n\n"])
def test_a_program_that_prints_nothing_says_so(said):
    with pytest.raises(lc.LauncherRefused, match=r"\(it printed nothing, exit 0\)"):
        lc.read_probe("--a", "/bin/true", ["/bin/true"], 0, said)


@pytest.mark.parametrize(
    ("said", "last"),
    [
        (
            "Traceback\nRuntimeError: first\nsome line\nFatal Python error: second\ntrailing\n",
            "Fatal Python error: second",
        ),
        ("usage: x\nx: error: bad option\nbye\n", "x: error: bad option"),
        ("one\n  two  \n\n", "two"),
        ("", "exit 3"),
    ],
    ids=["last-error", "lowercase-error", "last-line", "nothing"],
)
def test_a_python_that_fails_is_named_with_its_last_error_else_its_last_line_else_its_exit(said, last):
    with pytest.raises(lc.LauncherRefused) as exc:
        lc.read_probe("--b", "PYTHONHOME=/no py", ["py"], 3, said)
    assert str(exc.value) == f"--b='PYTHONHOME=/no py': py does not start a working Python ({last})"


def test_a_python_that_fails_after_answering_is_still_refused():
    with pytest.raises(lc.LauncherRefused, match="does not start a working Python"):
        lc.read_probe("--b", "py", ["py"], 1, answer())


def test_a_side_killed_by_a_signal_is_named_with_how_it_ended():
    with pytest.raises(lc.LauncherRefused) as exc:
        lc.read_probe("--b", "py", ["py"], -9, None)
    assert (
        str(exc.value)
        == "--b='py': py does not start a working Python (killed by signal 9 (SIGKILL), exit 137)"
    )


@pytest.mark.parametrize("name", ["torch", "aorta"])
def test_a_python_without_torch_or_aorta_is_told_what_to_install(name):
    said = f"Traceback (most recent call last):\nModuleNotFoundError: No module named '{name}'\n"
    with pytest.raises(lc.LauncherRefused) as exc:
        lc.read_probe("--b", "/v/python", ["/v/python", "-S"], 1, said)
    assert str(exc.value) == (
        f"--b='/v/python': /v/python -S cannot import {name} from outside this checkout (ModuleNotFoundError: "
        f"No module named '{name}'); install {name} in that environment (aorta: pip install <this checkout>)"
    )


def test_the_last_missing_module_is_named_and_only_a_module_not_found_line_counts():
    lines = [
        "ModuleNotFoundError: No module named 'aorta'",
        "During handling ...",
        "ModuleNotFoundError: No module named 'torch._C'",
        "ImportError: No module named 'aorta'",
    ]
    assert lc._missing_module(lines) == "torch"
    assert lc._missing_module(lines[:2]) == "aorta"
    assert lc._missing_module(lines[3:]) is None
    assert lc._missing_module(["ModuleNotFoundError: No module named 'numpy'"]) is None
    assert lc._missing_module(["  ModuleNotFoundError: No module named 'torch'"]) is None


# ------------------------------------------------------------------------------------------- the devices
def test_devices_are_said_by_name_and_count_names_sorted():
    probe = lc.Probe("p", "a", "t", None, ("B200", "A100", "B200"))
    assert probe.sees() == "3 GPU(s) (A100 x1, B200 x2)"
    assert lc.Probe("p", "a", "t", None, ()).sees() == "no GPU"


def test_two_sides_see_the_same_devices_in_any_order_and_else_both_views_are_named():
    a = lc.Probe("p", "a", "t", None, ("H100", "H100", "A100"))
    lc.same_devices("--a", a, "--b", "py", lc.Probe("q", "b", "t", None, ("A100", "H100", "H100")))
    with pytest.raises(lc.LauncherRefused) as exc:
        lc.same_devices("--a", a, "--b", "py", lc.Probe("q", "b", "t", None, ("H100", "A100")))
    assert str(exc.value) == (
        "--b='py': sees 2 GPU(s) (A100 x1, H100 x1) where --a sees 3 GPU(s) (A100 x1, H100 x2): both sides must "
        "run on the same devices (a container needs them passed in: docker run --gpus all, or --device /dev/kfd "
        "--device /dev/dri on ROCm; CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES alike on both sides)"
    )


def test_two_sides_with_as_many_devices_but_other_ones_are_refused():
    """The devices are compared by name, not only counted: two H100s on A and an H100 and an A100 on B are no
    match (a pass here would compare two GPU models as one stack against another)."""
    a = lc.Probe("p", "a", "t", None, ("H100", "H100"))
    with pytest.raises(
        lc.LauncherRefused,
        match=r"sees 2 GPU\(s\) \(A100 x1, H100 x1\) where --a sees 2 GPU\(s\) \(H100 x2\)",
    ):
        lc.same_devices("--a", a, "--b", "py", lc.Probe("q", "b", "t", None, ("H100", "A100")))
