"""A workload is a declared extension point (docs/adding-a-workload.md).

Every spec has its workload module and its benchmark module, and no benchmark module is without a spec. The
example the page adds (``scaled_add``) is taken from the page itself: its spec, workload and benchmark code
blocks are written into a copy of the repository the way the page says, which then touches only the files the
page names and passes the same checks as the registered workloads; in this process the workload runs through
the runner on the CPU device, and a stream whose work is dropped fails its output check.
"""

from __future__ import annotations

import filecmp
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import types
from collections.abc import Mapping
from pathlib import Path

import pytest
import torch
from benchmark_run import output_tail, run_benchmarks

from aorta.hw_queue import specs as specs_module
from aorta.hw_queue.runner import check_against_one_stream, run_workload
from aorta.hw_queue.specs import SPECS, WorkloadSpec
from aorta.hw_queue.workload import WorkloadCheckError
from aorta.hw_queue.workloads import REGISTRY
from aorta.timeline.kernel_timeline import NO_KERNELS_ON_CPU
from aorta.timing import TimingPlan

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "adding-a-workload.md"
WORKLOADS = Path("aorta/hw_queue/workloads")
BENCHMARKS = Path("benchmarks/hw_queue")
# Benchmark modules that run no workload of their own, with the reason.
NOT_A_WORKLOAD = {
    "test_kernel_timeline_known_answer.py": "known answers for the kernel-timestamp figures (stream_concurrency's)",
}
PLAN = TimingPlan(warmup_rounds=0, rounds=2, iterations_per_round=1)
SPEC_OF = re.compile(r"^\s+spec = SPECS\[\"(\w+)\"\]", re.MULTILINE)


# -- every spec has its modules --------------------------------------------------------------------
def workload_modules(root: Path) -> dict[str, list[str]]:
    """spec name -> the modules under aorta/hw_queue/workloads/ whose class points at it."""
    found: dict[str, list[str]] = {}
    for path in sorted((root / WORKLOADS).glob("*.py")):
        for name in SPEC_OF.findall(path.read_text(encoding="utf-8")):
            found.setdefault(name, []).append(path.name)
    return found


def marked_by_spec(text: str, module: str) -> bool:
    """Whether a benchmark module takes its markers from its workload's spec: ``pytestmark =
    spec_marks(Class)``, with ``Class`` imported from the workload module (aorta/hw_queue/marks.py)."""
    imported = re.search(rf"^from aorta\.hw_queue\.workloads\.{module} import (\w+)$", text, re.MULTILINE)
    return bool(imported) and f"pytestmark = spec_marks({imported.group(1)})" in text


def module_problems(root: Path, specs: Mapping[str, WorkloadSpec]) -> list[str]:
    """What a repository at ``root`` lacks for ``specs``, read from the files alone (no import, no torch):
    each spec's one workload module and its benchmark module with the spec's markers, and no workload or
    benchmark module without a spec."""
    problems = []
    modules = workload_modules(root)
    for name in specs:
        mods = modules.get(name, [])
        if len(mods) != 1:
            problems.append(f"{name}: {len(mods)} workload modules in {WORKLOADS} point at its spec {mods}")
        bench = root / BENCHMARKS / f"test_{name}.py"
        if not bench.exists():
            problems.append(f"{name}: no benchmark module {BENCHMARKS / bench.name}")
            continue
        text = bench.read_text(encoding="utf-8")
        if mods and f"aorta.hw_queue.workloads.{Path(mods[0]).stem} import" not in text:
            problems.append(f"{bench.name} does not import the workload from {mods[0]}")
        if mods and not marked_by_spec(text, Path(mods[0]).stem):
            problems.append(f"{bench.name}: pytestmark is not spec_marks(<its workload class>)")
    for name in sorted(set(modules) - set(specs)):
        problems.append(f"{modules[name]} point at {name!r}, which has no spec")
    for path in sorted((root / WORKLOADS).glob("*.py")):
        if path.name != "__init__.py" and not SPEC_OF.search(path.read_text(encoding="utf-8")):
            problems.append(f"{WORKLOADS / path.name} holds no workload (shared pieces go to parts/)")
    for path in sorted((root / BENCHMARKS).glob("test_*.py")):
        if path.name not in NOT_A_WORKLOAD and path.stem.removeprefix("test_") not in specs:
            problems.append(f"{BENCHMARKS / path.name} has no spec of its name")
    return problems


def test_every_spec_has_its_workload_and_benchmark_module():
    assert module_problems(REPO, SPECS) == []


def test_every_registered_class_lives_in_its_workload_module():
    modules = workload_modules(REPO)
    for name, cls in REGISTRY.items():
        assert cls.__module__ == f"aorta.hw_queue.workloads.{Path(modules[name][0]).stem}", name


def test_the_benchmark_modules_not_of_a_workload_exist():
    for name in NOT_A_WORKLOAD:
        assert (REPO / BENCHMARKS / name).exists(), name


# -- the page's example, added by following the page -----------------------------------------------
def doc_blocks() -> dict[str, str]:
    """The page's code blocks that open with a ``# <path>`` line: path -> the rest of the block."""
    blocks = {}
    for block in re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL):
        first, _, rest = block.partition("\n")
        if first.startswith("# "):
            blocks[first[2:].strip()] = rest
    return blocks


def doc_files(name: str) -> set[str]:
    """The files the page's table says a new workload touches, for the workload ``name``."""
    first_table = DOC.read_text(encoding="utf-8").split("\n## ")[0]
    table = re.findall(r"^\| `([^`]+)` \|", first_table, re.MULTILINE)
    return {path.replace("<name>", name) for path in table}


def example() -> tuple[str, str]:
    """(spec name, workload class name) of the page's example."""
    blocks = doc_blocks()
    (name,) = re.findall(r'name="(\w+)"', blocks["aorta/hw_queue/specs.py"])
    (cls,) = re.findall(r"^class (\w+)\(Workload\):", blocks[f"{WORKLOADS}/{name}.py"], re.MULTILINE)
    return name, cls


def insert_before_close(text: str, opening: str, lines: str) -> str:
    """``lines`` inserted at the end of the tuple that the dict comprehension after ``opening`` reads."""
    close = text.index("\n    )\n}\n", text.index(opening))
    return text[: close + 1] + lines + text[close + 1 :]


def add_by_the_page(root: Path) -> None:
    """The page's steps, in a copy of the repository at ``root``."""
    blocks = doc_blocks()
    name, cls = example()
    specs = root / "aorta/hw_queue/specs.py"
    block = blocks[str(specs.relative_to(root))].rstrip() + ","  # an entry of the tuple
    entry = "".join(f"        {line}\n" if line else "\n" for line in block.splitlines())
    specs.write_text(insert_before_close(specs.read_text(), "SPECS:", entry))
    for path in (f"{WORKLOADS}/{name}.py", f"{BENCHMARKS}/test_{name}.py"):
        (root / path).write_text(blocks[path])
    registry = root / WORKLOADS / "__init__.py"
    text = registry.read_text()
    last_import = text.rindex("from aorta.hw_queue.workloads.")
    end = text.index("\n", last_import) + 1
    text = text[:end] + f"from aorta.hw_queue.workloads.{name} import {cls}\n" + text[end:]
    registry.write_text(insert_before_close(text, "REGISTRY:", f"        {cls},\n"))


def changed_files(copy: Path, original: Path) -> set[str]:
    """Files under ``copy`` that differ from, or are not in, ``original``."""
    changed = set()
    for path in copy.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            twin = original / path.relative_to(copy)
            if not (twin.exists() and filecmp.cmp(path, twin, shallow=False)):
                changed.add(str(path.relative_to(copy)))
    return changed


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory) -> tuple[Path, set[str]]:
    """A copy of the repository's code and benchmarks with the page's example added as the page says, and
    the files that changed (before anything runs there)."""
    root = tmp_path_factory.mktemp("repo")
    ignore = shutil.ignore_patterns("__pycache__")
    for folder in ("aorta", "benchmarks", "config"):
        shutil.copytree(REPO / folder, root / folder, ignore=ignore)
    for file in ("conftest.py", "pytest.ini"):
        shutil.copy(REPO / file, root / file)
    add_by_the_page(root)
    return root, changed_files(root, REPO)


def load_specs(root: Path) -> dict[str, WorkloadSpec]:
    """``SPECS`` of the specs module under ``root`` (pure: it imports nothing of aorta, nor torch)."""
    spec = importlib.util.spec_from_file_location("sandbox_specs", root / "aorta/hw_queue/specs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["sandbox_specs"] = module  # dataclasses look their module up while the class is built
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules["sandbox_specs"]
    return module.SPECS


def test_the_example_touches_only_the_files_the_page_names(sandbox):
    root, changed = sandbox
    name, _ = example()
    assert changed == doc_files(name) - {"docs/hw_queue.md"}  # the table row: not code
    specs = load_specs(root)
    assert list(specs)[-1] == name and list(specs)[:-1] == list(SPECS)
    assert module_problems(root, specs) == []
    assert name not in SPECS and not (REPO / WORKLOADS / f"{name}.py").exists()  # the example stays a page


@pytest.fixture
def example_class(monkeypatch):
    """The page's workload class, built in this process against the page's spec (``SPECS`` restored after)."""
    blocks = doc_blocks()
    name, cls = example()
    spec = eval(blocks["aorta/hw_queue/specs.py"].strip().rstrip(","), vars(specs_module))
    monkeypatch.setitem(SPECS, name, spec)
    module = types.ModuleType(f"aorta.hw_queue.workloads.{name}")
    exec(compile(blocks[f"{WORKLOADS}/{name}.py"], f"<docs: {name}.py>", "exec"), vars(module))
    return getattr(module, cls)


@pytest.fixture(scope="module")
def cpu():
    from aorta.device import Device

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield Device.open("cpu")
    torch.set_num_threads(before)


@pytest.mark.parametrize("n", [1, 3])
def test_the_example_runs_through_the_runner_and_gets_its_figures(cpu, example_class, n):
    spec = example_class.spec
    workload = example_class(cpu, n, size="smoke")
    extra = run_workload(cpu, workload, cpu.streams(n), PLAN).extra_info
    assert extra["workload"] == spec.name and extra["headline_metric"] == spec.metric
    headline = extra["metrics"][spec.metric]
    assert headline["unit"] == spec.unit and headline["higher_is_better"] is spec.higher_is_better
    assert len(headline["samples"]) == PLAN.rounds and min(headline["samples"]) > 0
    assert extra["unavailable"]["interval_metrics"] == NO_KERNELS_ON_CPU  # no kernel timestamps on CPU
    (check,) = extra["stream_work"]["checks"]
    assert check["ok"] and extra["stream_work"]["declared"]["streams_declared"] == n
    assert extra["workload_info"] == {"elements_per_stream": 1 << 12}


@pytest.mark.parametrize("drop", [0, 1, 2])
def test_the_examples_output_check_fails_when_a_stream_does_not_run(cpu, example_class, drop):
    from test_stream_drop import dropping  # the same double the registered workloads are checked with

    workload = dropping(example_class, drop)(cpu, 3, size="smoke")
    workload.setup()
    with pytest.raises(WorkloadCheckError):
        check_against_one_stream(cpu, workload, workload.make_streams())


@pytest.mark.slow  # a pytest subprocess (torch, the plugin) and `aorta list`: tens of seconds on a busy CI core
def test_the_example_benchmark_runs_in_the_copy(sandbox, tmp_path):
    sandbox, _ = sandbox
    name, _ = example()
    spec = load_specs(sandbox)[name]
    env = dict(os.environ, PYTHONPATH=str(sandbox))
    env.pop("PYTEST_XDIST_WORKER", None)
    listed = subprocess.run(
        [sys.executable, "-m", "aorta", "list", name], cwd=sandbox, env=env, capture_output=True, text=True
    )
    assert listed.returncode == 0 and name in listed.stdout, listed.stderr
    out = tmp_path / "run.json"
    proc = run_benchmarks(
        f"{BENCHMARKS}/test_{name}.py",
        "-m",
        f"{spec.priority} and {spec.category}",  # the markers select it
        "--aorta-device=cpu",
        "--aorta-streams=1,3",
        "--aorta-rounds=2",
        "--aorta-warmup=0",
        root=sandbox,
        json_out=out,
    )
    assert proc.returncode == 0, output_tail(proc)
    runs = json.loads(out.read_text())["benchmarks"]
    assert sorted(b["name"] for b in runs) == [f"test_{name}[streams1]", f"test_{name}[streams3]"]
    for b in runs:
        extra = b["extra_info"]
        assert extra["metrics"][extra["headline_metric"]]["value"] > 0
        assert extra["stream_work"]["checks"][0]["ok"]
