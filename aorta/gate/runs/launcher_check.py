"""``aorta ab``'s launcher check: a side is checked by what its runs need, before any run (issue 56, class 6).

A launcher (``--a``, ``--b``) must start a Python that imports torch and aorta by itself, from outside this
checkout, and sees the devices side A sees. Asked only "does ``python -c 'import aorta'`` exit 0?", ``/bin/true``
and ``/bin/echo`` passed, so did a Python without aorta started in the checkout (``python -c`` puts the working
folder first on its path), and every one of them then failed after A's check run (80-90 s on a GPU) was spent.

The probe runs ``<launcher> -c PROBE`` in an empty folder, with the checkout taken out of ``PYTHONPATH`` (the
side's own settings kept) and out of the probe's own path; it prints one line, ``MARKER {json}``: the
interpreter, where aorta and torch came from, and the devices torch sees. An answer without that line (a
program that is no Python, or that ignores its arguments) is refused as such.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from aorta.record.redact import launcher_secrets, redact_text

MARKER = "aorta-launcher-probe:"
# What the side's Python runs (-c). Written so that its own text never holds MARKER (a program that echoes its
# arguments must not pass); the working folder that ``-c`` puts first on the path is dropped before importing.
PROBE = """\
import sys
if sys.path and sys.path[0] == "":
    del sys.path[0]
import json, os
import torch
import aorta
info = {"python": sys.executable, "aorta": os.path.dirname(aorta.__file__), "torch": torch.__version__,
        "hip": getattr(torch.version, "hip", None), "devices": []}
if torch.cuda.is_available():
    info["devices"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
print("aorta-launcher" + "-probe:", json.dumps(info), flush=True)
"""


class LauncherRefused(ValueError):
    """A side that cannot run its runs: the option, the value and why."""


@dataclass(frozen=True)
class Probe:
    python: str
    aorta: str
    torch: str
    hip: str | None
    devices: tuple[str, ...]

    def sees(self) -> str:
        """The devices, in words: ``2 GPU(s) (NVIDIA H100 80GB HBM3 x2)`` or ``no GPU``."""
        if not self.devices:
            return "no GPU"
        names = sorted(set(self.devices))
        counted = ", ".join(f"{n} x{self.devices.count(n)}" for n in names)
        return f"{len(self.devices)} GPU(s) ({counted})"


def checkout_roots() -> list[Path]:
    """This checkout: the folder above the aorta package this process imported, where it is not an installed
    package, and the working folder the runs start in."""
    import aorta

    roots = [Path.cwd().resolve()]
    package_root = Path(aorta.__file__).resolve().parents[1]
    if "site-packages" not in package_root.parts and "dist-packages" not in package_root.parts:
        roots.append(package_root)
    return roots


def probe_env(parent: Mapping[str, str], side: Mapping[str, str], roots: Sequence[Path]) -> dict[str, str]:
    """The probe's environment: this process's, with ``PYTHONPATH`` entries inside the checkout dropped, then the
    side's own settings (a ``PYTHONPATH`` the side sets itself is its own)."""
    env = dict(parent)
    kept = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and not _inside(p, roots)]
    if kept:
        env["PYTHONPATH"] = os.pathsep.join(kept)
    else:
        env.pop("PYTHONPATH", None)
    env.update(side)
    return env


def _inside(entry: str, roots: Sequence[Path]) -> bool:
    path = Path(entry).resolve()
    return any(path == r or r in path.parents for r in roots)


def read_probe(option: str, text: str, launcher: Sequence[str], returncode: int, said: str) -> Probe:
    """The side's answer, or ``LauncherRefused`` saying why it cannot run ``aorta ab``'s runs; the launcher's
    secrets hidden in every copy of it the refusal holds (issue 65: the second, unredacted copy)."""
    try:
        return _read_probe(option, text, launcher, returncode, said)
    except LauncherRefused as exc:
        hidden = launcher_secrets(text) + launcher_secrets(shlex.join(launcher))
        raise LauncherRefused(redact_text(str(exc), hidden)) from None


def _read_probe(option: str, text: str, launcher: Sequence[str], returncode: int, said: str) -> Probe:
    where = f"{option}={text!r}"
    lines = (said or "").strip().splitlines()
    answer = [line for line in lines if line.startswith(MARKER)]
    if returncode != 0:
        from aorta.processes.child_process import ended

        said_why = [line for line in lines if "Error" in line or "error:" in line]  # Fatal Python error, ...
        last = (said_why or [line for line in lines if line.strip()] or [ended(returncode)])[-1]
        missing = _missing_module(lines)
        what = (
            f"cannot import {missing} from outside this checkout ({last.strip()}); install {missing} in that "
            "environment (aorta: pip install <this checkout>)"
            if missing
            else f"does not start a working Python ({last.strip()})"
        )
        raise LauncherRefused(f"{where}: {' '.join(launcher)} {what}")
    if not answer:
        shown = f"it printed {lines[0][:80]!r}" if lines else "it printed nothing"
        raise LauncherRefused(
            f"{where}: {' '.join(launcher)} is not a Python that runs 'python -c CODE' ({shown}, exit 0): give a "
            "Python command, e.g. /opt/venv/bin/python or 'docker run ... IMAGE python'"
        )
    try:
        info = json.loads(answer[-1][len(MARKER) :])
        return Probe(
            python=str(info["python"]),
            aorta=str(info["aorta"]),
            torch=str(info["torch"]),
            hip=info.get("hip"),
            devices=tuple(str(d) for d in info["devices"]),
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise LauncherRefused(
            f"{where}: {' '.join(launcher)} answered the check unreadably ({exc})"
        ) from None


def _missing_module(lines: Sequence[str]) -> str | None:
    for line in reversed(lines):
        for name in ("torch", "aorta"):
            if line.startswith("ModuleNotFoundError") and f"'{name}" in line:
                return name
    return None


def same_devices(a_option: str, a: Probe, b_option: str, b_text: str, b: Probe) -> None:
    """Both sides see the same devices, or ``LauncherRefused`` naming B's launcher and both views."""
    if sorted(a.devices) != sorted(b.devices):
        raise LauncherRefused(
            f"{b_option}={b_text!r}: sees {b.sees()} where {a_option} sees {a.sees()}: both sides must run on the "
            "same devices (a container needs them passed in: docker run --gpus all, or --device /dev/kfd "
            "--device /dev/dri on ROCm; CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES alike on both sides)"
        )
