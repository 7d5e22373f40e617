"""Run one proof on this machine: ``python3 -m scripts.gpu.prove NAME [INPUT ...] [options]``.

    python3 -m scripts.gpu.prove --list                      # every proof: GPUs, knobs, the table it fills
    python3 -m scripts.gpu.prove gate --dry-run              # the commands, nothing run
    python3 -m scripts.gpu.prove gate --set slowdowns=0.02 --budget 540 --out "$OUT"
    python3 -m scripts.gpu.prove judge docs/data/gate_pools/pool_a.tgz docs/data/gate_pools/pool_c.tgz

Steps, the same for every proof:
1. the GPU line (``nvidia-smi``, else ``rocm-smi``) into the work folder;
2. the runs in order, each a fresh process from the repository root (this checkout's aorta first on
   PYTHONPATH), its log beside it; no run starts that the slowest so far would carry past the budget, and
   each is cut at what is left of it;
3. everything the runs left, in one archive ``OUT/<name>.tgz`` (a lent GPU machine brings back 8 files);
4. the proof's table, into ``OUT/table.txt`` and printed last.

Exit status: 0 when every run exited as its proof expects, 1 otherwise, 2 for bad usage.
"""

from __future__ import annotations

import argparse
import math
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from aorta.processes.child_process import end_tree, run_until_stopped, start_child
from aorta.record.output_arguments import check_parsed_outputs, output_argument
from aorta.record.output_paths import OutputPathError, check_output
from aorta.record.redact import env_secrets, redact_argv
from scripts.gpu.proof import Knobs, Proof, Run
from scripts.gpu.proofs import PROOFS

REPO = Path(__file__).resolve().parents[2]
TIMED_OUT = 124  # as timeout(1) reports it
NOT_RUN = "not run"


@dataclass
class Budget:
    """Seconds for the whole proof. A run starts only if the slowest run so far, plus a tenth, still fits
    (a pool of fresh processes stops before the one that would be cut); each is cut at what is left."""

    total_s: float
    clock: Callable[[], float] = time.monotonic

    def __post_init__(self) -> None:
        self.start = self.clock()
        self.slowest_s = 0.0

    def left_s(self) -> float:
        return self.total_s - (self.clock() - self.start)

    def allows_another(self) -> bool:
        return self.left_s() >= max(self.slowest_s * 1.1, 1.0)

    def took(self, seconds: float) -> None:
        self.slowest_s = max(self.slowest_s, seconds)


def gpu_line() -> str:
    """The GPUs as the vendor tool names them (model, UUID, driver, SM clock, temperature, power), or why not."""
    for cmd in (
        [
            "nvidia-smi",
            "--query-gpu=name,uuid,driver_version,clocks.sm,temperature.gpu,power.draw",
            "--format=csv,noheader",
        ],
        ["rocm-smi", "--showproductname", "--showuniqueid"],
    ):
        if shutil.which(cmd[0]):
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
            if done.returncode == 0 and done.stdout.strip():
                return done.stdout.strip()
    return "no GPU line (neither nvidia-smi nor rocm-smi answered)"


def run_env(proof: Proof, run: Run) -> dict[str, str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, (str(REPO), os.environ.get("PYTHONPATH")))),
    }
    env["PYTHONUNBUFFERED"] = "1"
    for key, value in {**proof.env, **run.env}.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def _one(argv: tuple[str, ...], env: dict[str, str], log: Path, limit_s: float) -> int:
    """One run, in a process group of its own (``start_child``): cut at ``limit_s`` with its whole tree
    (torchrun and its ranks, not the launcher alone); a stop signal to the driver ends it too
    (``run_until_stopped`` in ``main``)."""
    with log.open("w") as out:
        out.write("+ " + shlex.join(redact_argv(argv, env_secrets(env))) + "\n")  # no password in a log
        out.flush()
        proc = start_child(argv, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            return proc.wait(timeout=limit_s)
        except subprocess.TimeoutExpired:
            end_tree(proc, grace_s=15)
            out.write(f"\n[prove: cut at {limit_s:.0f} s]\n")
            return TIMED_OUT


def run_all(proof: Proof, runs: list[Run], work: Path, budget: Budget) -> list[tuple[str, int | str, float]]:
    """Every run's processes in order under the budget: (log name, exit code or ``not run``, seconds)."""
    rows: list[tuple[str, int | str, float]] = []
    for run in runs:
        env = run_env(proof, run)
        for name, argv in run.instances():
            if not budget.allows_another():
                rows.append((name, NOT_RUN, 0.0))
                print(f"  {name}: not run, {budget.left_s():.0f} s of the budget left", flush=True)
                continue
            t0 = budget.clock()
            rc = _one(argv, env, work / f"{name}.log", min(run.limit_s, budget.left_s()))
            took = budget.clock() - t0
            budget.took(took)
            rows.append((name, rc, took))
            print(f"  {name}: exit {rc} in {took:.0f} s", flush=True)
            if run.repeat > 1 and rc != 0 and run.stop_on_failure:
                print(f"  {run.name}: run failed (exit {rc}), the pool stops here", flush=True)
                break
    return rows


def check_inputs(paths: list[str]) -> None:
    """Before anything runs (a dry run too): every input is a file or folder. ``KEY=VALUE`` given bare is a
    knob meant for ``--set``, read as an input path and, for a proof that reads no input, else never noticed."""
    for raw in paths:
        if not Path(raw).exists():
            hint = f"; a knob is set with --set {raw}" if "=" in raw else ""
            raise ValueError(f"input {raw}: no such file or folder{hint}")


def unpack_inputs(paths: list[str], work: Path) -> list[Path]:
    """Earlier calls' archives unpacked under ``<work>/in/<stem>``; folders used where they are."""
    folders = []
    for raw in paths:
        path = Path(raw).resolve()
        if path.is_dir():
            folders.append(path)
            continue
        if not path.is_file() or not path.name.endswith((".tgz", ".tar.gz", ".tar")):
            raise ValueError(f"input {raw}: give an earlier call's .tgz or a folder")
        dest = work / "in" / path.name.split(".")[0]
        dest.mkdir(parents=True, exist_ok=True)
        try:
            with tarfile.open(path) as tar:
                tar.extractall(dest, filter="data")
        except (tarfile.TarError, OSError, EOFError) as exc:  # an empty or cut file: no traceback
            raise ValueError(
                f"input {raw}: not a readable archive ({exc}); give an earlier call's .tgz"
            ) from None
        folders.append(dest)
    return folders


# A merged trace or a full profiler export is left out of the archive (and named in the table).
ARCHIVE_FILE_LIMIT_BYTES = 64 * 2**20


def archive(work: Path, dest: Path) -> list[str]:
    """One .tgz of the work folder, less the unpacked inputs, profiler traces (hundreds of MB) and any file
    over ARCHIVE_FILE_LIMIT_BYTES; returns what was left out."""
    left_out: list[str] = []

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        parts = Path(info.name).parts
        if "torch_profiler" in parts or parts[1:2] == ("in",):
            return None
        if info.size > ARCHIVE_FILE_LIMIT_BYTES:
            left_out.append(f"{'/'.join(parts[1:])} ({info.size / 2**20:.0f} MiB)")
            return None
        return info

    with tarfile.open(dest, "w:gz") as tar:
        tar.add(work, arcname=work.name, filter=keep)
    return left_out


def dry_run(proof: Proof, runs: list[Run]) -> None:
    print(f"{proof.name}: {proof.what} ({proof.gpus} GPU(s); fills '{proof.fills}')")
    for run in runs:
        env = " ".join(
            f"{k}={v}" if v is not None else f"-u {k}" for k, v in {**proof.env, **run.env}.items()
        )
        for name, argv in run.instances():
            print(f"[{name}, {run.limit_s}s] {env + ' ' if env else ''}{shlex.join(argv)}")


def prove(proof: Proof, knobs: Knobs, out: Path, budget: Budget, raw_inputs: list[str]) -> int:
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{proof.name}.", dir=os.environ.get("TMPDIR")))
    try:
        knobs.inputs = tuple(unpack_inputs(raw_inputs, work))
        gpu = gpu_line() if proof.gpus else "offline: no GPU work"
        (work / "gpu.txt").write_text(gpu + "\n")
        for rel, text in proof.files(knobs).items():
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            (work / rel).write_text(text)
        print(f"{proof.name}: {gpu.splitlines()[0] if gpu else ''}", flush=True)
        runs = list(proof.runs(knobs, work))
        expected = {n: r.expect for r in runs for n, _ in r.instances()}
        rows = run_all(proof, runs, work, budget)
        for rel in proof.collect:
            if (REPO / rel).exists():
                shutil.move(str(REPO / rel), str(work / Path(rel).name))
        (work / "steps.tsv").write_text("".join(f"{n}\t{rc}\t{s:.0f}\n" for n, rc, s in rows))
        try:
            lines = proof.table(work, knobs)
        except Exception as exc:  # the archive still comes back: the table can be printed from it later
            lines = [f"no table: {type(exc).__name__}: {exc}"]
        left_out = archive(work, out / proof.archive_name(knobs))
        head = [f"{proof.name} ({proof.fills}): {gpu.splitlines()[0]}"]
        head += [f"{n}: exit {rc}, {s:.0f} s" for n, rc, s in rows]
        head += [f"left out of the archive: {', '.join(left_out)}"] if left_out else []
        text = "\n".join([*head, "", *lines]) + "\n"
        (out / "table.txt").write_text(text)
        print(f"\nfiles in {out}: {', '.join(sorted(p.name for p in out.iterdir()))}\n")
        print(text, end="")
        bad = [n for n, rc, _ in rows if rc != NOT_RUN and rc not in expected.get(n, (0,))]
        return 1 if bad else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


def list_lines() -> list[str]:
    lines = []
    for p in PROOFS.values():
        knobs = ", ".join(f"{k}={v}" for k, v in p.knobs.items()) or "-"
        lines.append(
            f"{p.name:<18} {p.gpus} GPU  fills '{p.fills}'\n{'':<18} {p.what}\n{'':<18} knobs: {knobs}"
        )
    return lines


def parse_budget_s(text: str) -> float:
    """``--budget``: seconds, finite and above zero (a negative or NaN budget ran nothing and exited 0)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--budget={text!r}: give seconds, e.g. 540") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"--budget={text!r}: give seconds above 0, e.g. 540")
    return value


def parse_set(values: list[str]) -> dict[str, str]:
    out = {}
    for item in values:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise ValueError(f"--set {item}: give KEY=VALUE")
        out[key] = value
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m scripts.gpu.prove", description=__doc__.splitlines()[0])
    ap.add_argument("name", nargs="?", help="the proof (--list names them)")
    ap.add_argument(
        "inputs", nargs="*", help="earlier calls' archives or folders, for the proofs that read them"
    )
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a knob of the proof")
    ap.add_argument(
        "--budget", type=parse_budget_s, help="seconds for every run together (default: the proof's)"
    )
    output_argument(
        ap,
        "--out",
        kind="dir",
        type=Path,
        help="where the archive and table.txt go (default $OUT, else artifacts/NAME)",
    )
    ap.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    ap.add_argument("--list", action="store_true", help="every proof, its GPUs, knobs and table")
    a = ap.parse_intermixed_args(argv)  # inputs may follow the options
    if a.list:
        print("\n".join(list_lines()))
        return 0
    if a.name not in PROOFS:
        print(f"prove: no proof {a.name!r}; the proofs: {', '.join(PROOFS)}", file=sys.stderr)
        return 2
    proof = PROOFS[a.name]
    try:
        check_inputs(a.inputs)
        knobs = Knobs(proof.knobs, parse_set(a.set), [Path(p) for p in a.inputs])
        if a.dry_run:
            dry_run(proof, list(proof.runs(knobs, Path("$WORK"))))
            return 0
        out = a.out or Path(os.environ.get("OUT") or REPO / "artifacts" / proof.name)
        check_parsed_outputs(ap, a, {})  # before any run (issue 46): not a file, writable
        check_output("--out" if a.out else "$OUT", out, kind="dir")
        budget = Budget(a.budget or proof.budget_s)
        return run_until_stopped(f"prove {proof.name}", lambda: prove(proof, knobs, out, budget, a.inputs))
    except (ValueError, OutputPathError) as exc:
        print(f"prove {proof.name}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
