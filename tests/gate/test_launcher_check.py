"""``aorta ab`` checks a launcher by what its runs need, before any run (issue 56, class 6): it starts a Python that
imports torch and aorta from outside this checkout and sees the devices side A sees. /bin/true, /bin/echo, a
Python without torch, this Python under settings that break it: each refused in one line naming the option,
the value and why, exit 2, before side A runs. Side A here is a stand-in that answers the check at once (a
canned answer of the probe's protocol), so each refusal costs B's check only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aorta.cli import main
from aorta.exit_codes import EXIT_USAGE
from aorta.gate.runs import launcher_check as lc

REPO = Path(__file__).resolve().parents[2]


def canned_side(tmp_path: Path, devices: list[str]) -> str:
    """A side's 'Python' that answers the check with ``devices`` (and nothing else)."""
    info = {"python": "/x/python", "aorta": "/x/aorta", "torch": "2.9", "hip": None, "devices": devices}
    script = tmp_path / f"side-{len(devices)}"
    script.write_text(f"#!/bin/sh\necho '{lc.MARKER} {json.dumps(info)}'\n")
    script.chmod(0o755)
    return str(script)


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def ab(a: str, b: str) -> int:
    return main(["ab", "--a", a, "--b", b, "--runs", "2", "--", "benchmarks/hw_queue"])


@pytest.mark.parametrize(
    ("launcher", "said"),
    [
        ("/bin/true", "/bin/true is not a Python that runs 'python -c CODE' (it printed nothing, exit 0)"),
        (
            "/bin/echo",
            "/bin/echo is not a Python that runs 'python -c CODE' (it printed '-c import sys', exit 0)",
        ),
        (
            "PYTHONHOME=/nonexistent",
            f"{sys.executable} does not start a working Python (ModuleNotFoundError: No module named 'encodings')",
        ),
        (
            f"{sys.executable} -S",  # no site-packages: a Python without torch
            f"{sys.executable} -S cannot import torch from outside this checkout (ModuleNotFoundError: No module "
            "named 'torch'); install torch in that environment",
        ),
    ],
    ids=["true", "echo", "PYTHONHOME", "no-torch"],
)
def test_a_launcher_that_cannot_run_b_is_refused_before_any_run(in_tmp, capsys, launcher, said):
    assert ab(canned_side(in_tmp, []), launcher) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith(f"aorta ab: --b={launcher!r}: {said}"), err
    assert len(err.splitlines()) == 1 and not (in_tmp / ".aorta").exists()


def test_a_side_that_sees_other_devices_than_a_is_refused_naming_both(in_tmp, capsys):
    a = canned_side(in_tmp, ["NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"])
    b = canned_side(in_tmp, [])  # a container started without --gpus
    assert ab(a, b) == EXIT_USAGE
    assert capsys.readouterr().err.startswith(
        f"aorta ab: --b={b!r}: sees no GPU where --a sees 2 GPU(s) (NVIDIA H100 80GB HBM3 x2): both sides must "
        "run on the same devices"
    )


def test_the_checkout_is_taken_out_of_the_probe_s_pythonpath_and_the_side_s_own_setting_kept(tmp_path):
    roots = [REPO]
    parent = {"PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "sub"), "/opt/lib"]), "HOME": "/h"}
    assert lc.probe_env(parent, {}, roots) == {"PYTHONPATH": "/opt/lib", "HOME": "/h"}
    assert lc.probe_env({"PYTHONPATH": str(REPO)}, {}, roots) == {}
    assert lc.probe_env(parent, {"PYTHONPATH": str(REPO)}, roots)["PYTHONPATH"] == str(REPO)


def test_the_probe_does_not_import_from_the_folder_it_starts_in(tmp_path):
    """``python -c`` puts its working folder first on the path: a checkout's torch or aorta there must not
    answer for the side's own (a docker launcher's ``-w $PWD`` starts it in the checkout)."""
    fake = tmp_path / "torch"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise SystemExit('the torch of the folder it started in')\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", lc.PROBE], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    probe = lc.read_probe("--a", "", [sys.executable], 0, done.stdout)
    assert not probe.torch.startswith("the torch") and Path(probe.aorta).name == "aorta"


def test_an_answer_is_read_only_from_the_probe_s_own_line():
    assert lc.MARKER not in lc.PROBE  # a program that echoes its arguments cannot answer
    with pytest.raises(lc.LauncherRefused, match=r"--b='x': x answered the check unreadably"):
        lc.read_probe("--b", "x", ["x"], 0, f"{lc.MARKER} {{not json")
