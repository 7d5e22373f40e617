"""Measure how much machines of one kind differ, from the recorded A/A pools, into the gate's table.

    python3 scripts/machine_spread.py docs/data/gate_pools/*.tgz            # writes aorta/gate/data/machine_spread.json
    python3 scripts/machine_spread.py docs/data/gate_pools/*.tgz --check    # exit 1 if the file differs

Each pool (``scripts/gpu/gate_pool.sh``: one device call on one machine, a ``.tgz`` or its unpacked folder)
holds fresh-process runs. Only A/A pools count (``kind.txt`` says ``aa``, or, where it is absent, no run
carries a deliberate slowdown): a slowdown or a changed setting is not a machine. A run's machine is its
record's GPU UUID, else its pool's ``gpu.txt`` (nvidia-smi, GPU 0: rank 0's GPU for a multi-GPU pool), as
``scripts/gpu/gate_pairs.py`` names them. The table (``aorta.gate.stats.machine_spread.measure``) and its
provenance (pools, machines, runs, when they were measured, this command) are written as JSON; the
summary per GPU model is printed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tarfile
from pathlib import Path, PurePosixPath

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # runs from a checkout that was never installed
    sys.path.insert(0, str(REPO))

from aorta.gate.comparison.compare import deliberate_slowdowns  # noqa: E402
from aorta.gate.stats.machine_noise import __name__ as ESTIMATOR  # noqa: E402
from aorta.gate.stats.machine_spread import SCHEMA, PoolRun, measure  # noqa: E402
from aorta.gate.stats.samples import baseline_runs  # noqa: E402
from aorta.record.machines import aorta_machine  # noqa: E402

DEFAULT_OUT = REPO / "aorta" / "gate" / "data" / "machine_spread.json"


def _pool_files(path: Path) -> dict[str, bytes]:
    """A pool's files by name (no folders), from its ``.tgz`` or its folder."""
    if path.is_dir():
        return {p.name: p.read_bytes() for p in path.iterdir() if p.is_file()}
    out = {}
    with tarfile.open(path) as tar:
        for member in tar.getmembers():
            f = tar.extractfile(member) if member.isfile() else None
            if f is not None:
                out[PurePosixPath(member.name).name] = f.read()
    return out


def _run_number(name: str) -> int:
    stem = name.removesuffix(".json")
    return int(stem.rsplit("-", 1)[-1]) if stem.rsplit("-", 1)[-1].isdigit() else 0


def read_pool(path: Path) -> tuple[dict, list[PoolRun]]:
    """(the pool's provenance entry, its runs; none where the pool is not A/A)."""
    files = _pool_files(path)
    name = path.name.removesuffix(".tgz")
    names = sorted(
        (n for n in files if n.endswith(".json") and not n.endswith(".verdict.json")), key=_run_number
    )
    docs = [json.loads(files[n]) for n in names]
    kind_words = files.get("kind.txt", b"").decode().split()
    if kind_words:
        kind = " ".join(kind_words)
    else:
        kind = "slowdown" if any(deliberate_slowdowns(d) for d in docs) else "aa"
    gpu_lines = files.get("gpu.txt", b"").decode().splitlines()
    gpu_fields = [x.strip() for x in gpu_lines[0].split(",")] if gpu_lines else []
    pool_uuid = gpu_fields[1].removeprefix("GPU-") if len(gpu_fields) > 1 else ""
    runs = []
    for doc in docs:
        m = aorta_machine(doc)
        machine = str(m.get("gpu_uuid") or pool_uuid)
        model = str(m.get("gpu_name") or "")
        if kind == "aa" and machine and model:
            runs.append(PoolRun(model, machine, name, baseline_runs(doc, name)[0]))
    first = aorta_machine(docs[0]) if docs else {}
    dates = sorted(str(d["datetime"]) for d in docs if d.get("datetime"))
    entry = {
        "pool": name,
        "kind": kind,
        "used": bool(runs),
        "gpu_model": first.get("gpu_name"),
        "gpu_count": first.get("gpu_count"),
        "machine": runs[0].machine if runs else pool_uuid,
        "runs": len(docs),
        "measured": [dates[0], dates[-1]] if dates else [],  # the first and the last run's start
    }
    return entry, runs


def table(paths: list[Path], command: str) -> dict:
    entries, runs = [], []
    for p in paths:
        entry, pool_runs = read_pool(p)
        entries.append(entry)
        runs.extend(pool_runs)
    dates = sorted(d for e in entries if e["used"] for d in e["measured"])
    return {
        "schema": SCHEMA,
        "provenance": {
            "command": command,
            "measured": f"{dates[0]} to {dates[-1]}" if dates else "",
            "estimator": f"{ESTIMATOR}.machine_spread (log run figures; a run's figure is the median of its rounds)",
            "pools": entries,
        },
        "models": measure(runs),
    }


def _summary_lines(doc: dict) -> list[str]:
    out = []
    for model, entry in doc["models"].items():
        s = entry["summary"]
        if not s.get("figures"):
            out.append(f"{model}: no figure measured on two machines")
            continue
        above = ", ".join(f"> {float(k) * 100:g}%: {v}" for k, v in s["above"].items())
        out.append(
            f"{model}: {len(entry['machines'])} machines, {s['figures']} figures; sigma_machine median "
            f"{s['median'] * 100:.2f}%, p90 {s['p90'] * 100:.2f}%, max {s['max'] * 100:.2f}% ({s['max_at']}); {above}"
        )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="scripts/machine_spread.py", description=__doc__.split("\n")[0])
    ap.add_argument("pools", nargs="+", type=Path, help="pool .tgz files or folders (docs/data/gate_pools)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"default {DEFAULT_OUT.relative_to(REPO)}")
    ap.add_argument(
        "--check", action="store_true", help="compare with --out instead of writing it; exit 1 if it differs"
    )
    args = ap.parse_args(argv)
    paths = sorted(args.pools, key=lambda p: p.name)
    shown = [
        str(p.resolve().relative_to(REPO)) if p.resolve().is_relative_to(REPO) else p.name for p in paths
    ]
    doc = table(paths, "python3 scripts/machine_spread.py " + " ".join(shown))
    text = json.dumps(doc, indent=1, sort_keys=True) + "\n"
    if args.check:
        same = args.out.is_file() and json.loads(args.out.read_text())["models"] == doc["models"]
        print(f"{args.out}: {'matches' if same else 'DIFFERS from'} the pools")
        return 0 if same else 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print("\n".join(_summary_lines(doc)))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
