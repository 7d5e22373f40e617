"""Workload specs as pure data: ``aorta list`` and option parsing without torch; typed parameters that refuse
a misspelled or mistyped name instead of ignoring it."""

import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from aorta.device import Device
from aorta.hw_queue.specs import SPECS, WorkloadSpec, ints
from aorta.hw_queue.workloads import REGISTRY
from aorta.hw_queue.workloads.copy_compute_overlap import CopyComputeOverlap
from aorta.hw_queue.workloads.graph_subgraphs import GraphSubgraphs
from aorta.hw_queue.workloads.hetero_kernels import HeteroKernels
from aorta.hw_queue.workloads.large_gemm_only import LargeGemmOnly
from aorta.hw_queue.workloads.moe import Moe
from aorta.hw_queue.workloads.rag_pipeline import RagPipeline

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cpu():
    return Device.open("cpu")


def test_list_and_option_parsing_do_not_import_torch():
    code = (
        "import sys, aorta.options, aorta.cli\n"
        "assert aorta.cli.main(['list']) == 0\n"
        "assert aorta.cli.main(['list', 'moe']) == 0\n"
        "assert aorta.options.parse_size('smoke') == 'smoke'\n"
        "loaded = sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.'))\n"
        "print('TORCH', loaded)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert "copy_compute_overlap" in proc.stdout
    assert "TORCH []" in proc.stdout


def test_registry_and_specs_agree():
    assert list(REGISTRY) == list(SPECS)
    for name, cls in REGISTRY.items():
        assert cls.spec is SPECS[name]


@pytest.mark.parametrize("name", list(REGISTRY))
def test_every_workload_declares_the_parameters_it_reads(name):
    """Every ``self.params`` key a workload module reads, and every size-table key it lets a parameter
    override (``self.sized(SIZES)``), is declared in its spec with a type the check understands."""
    cls = REGISTRY[name]
    spec = cls.spec
    assert isinstance(spec.params, dict) and spec.params, f"{name} declares no parameters"
    source = inspect.getsource(inspect.getmodule(cls))
    read = set(re.findall(r"self\.params\.get\(\"(\w+)\"", source)) | set(
        re.findall(r"self\.params\[\"(\w+)\"\]", source)
    )
    if "self.sized(SIZES)" in source:
        sizes = vars(inspect.getmodule(cls))["SIZES"]
        read |= {k for cfg in sizes.values() for k in cfg}
    missing = read - set(spec.params)
    assert not missing, f"{name} reads undeclared parameters {sorted(missing)}"
    unused = set(spec.params) - read
    assert not unused, f"{name} declares parameters it never reads: {sorted(unused)}"


@pytest.mark.parametrize(
    "cls,kwargs,message",
    [
        (Moe, {"shapes": (8, 16, 32)}, "moe: unknown parameter 'shapes' (allowed: shape)"),
        (
            GraphSubgraphs,
            {"mdoe": "graph"},
            "graph_subgraphs: unknown parameter 'mdoe' (allowed: mode, G, B, D, L)",
        ),
        (RagPipeline, {"q": 4}, "rag_pipeline: unknown parameter 'q' (allowed: Q, B, T, D, N, V, k, r, S)"),
        (
            CopyComputeOverlap,
            {"copymb": 1.0},
            "copy_compute_overlap: unknown parameter 'copymb' (allowed: mode, "
            "work_streams, copy_mb, gemm_side)",
        ),
    ],
)
def test_a_misspelled_parameter_is_an_error(cpu, cls, kwargs, message):
    with pytest.raises(TypeError) as exc:
        cls(cpu, 1, size="smoke", **kwargs)
    assert str(exc.value) == message


@pytest.mark.parametrize(
    "cls,kwargs,message",
    [
        (
            LargeGemmOnly,
            {"shape": (64, 64)},
            "large_gemm_only: parameter 'shape' must be tuple[int, int, int], got (64, 64) (tuple)",
        ),
        (LargeGemmOnly, {"shape": [64, 64, 64]}, "must be tuple[int, int, int], got [64, 64, 64] (list)"),
        (RagPipeline, {"Q": 4.0}, "rag_pipeline: parameter 'Q' must be int, got 4.0 (float)"),
        (RagPipeline, {"Q": True}, "parameter 'Q' must be int, got True (bool)"),
        (
            CopyComputeOverlap,
            {"copy_mb": "big"},
            "copy_compute_overlap: parameter 'copy_mb' must be float, got 'big' (str)",
        ),
    ],
)
def test_a_mistyped_parameter_is_an_error(cpu, cls, kwargs, message):
    with pytest.raises(TypeError, match=re.escape(message)):
        cls(cpu, 1, size="smoke", **kwargs)


def test_declared_parameters_are_taken(cpu):
    assert RagPipeline(cpu, 1, size="smoke", Q=2).sized({"smoke": {"Q": 4, "B": 2}}) == {"Q": 2, "B": 2}
    w = CopyComputeOverlap(
        cpu, 1, size="smoke", copy_mb=1, work_streams=None
    )  # an int is a float; None: default
    assert w.copy_mb == 1 and w.work_streams == 1
    assert (
        LargeGemmOnly(cpu, 2, size="smoke", dtype="fp32", shape=(8, 8, 4)).size_label()
        == "2 x fp32 GEMM 8x8x4"
    )
    assert HeteroKernels(cpu, 2, size="smoke", with_gemms=None).size_label() == "smoke"  # None: the default
    assert HeteroKernels(cpu, 2, size="smoke", with_gemms=False).size_label() == "smoke {'with_gemms': False}"


def test_a_spec_refuses_a_type_it_cannot_check():
    with pytest.raises(ValueError, match="parameter 'f' has a type check_params cannot check"):
        WorkloadSpec(
            name="w",
            category="compute",
            priority="p0",
            description="",
            metric="m",
            unit="ms",
            higher_is_better=False,
            params={"f": list[int]},
        )
    assert ints("a", "b") == {"a": int, "b": int}


@pytest.mark.parametrize(
    "n, reason",
    [
        (200, "large_gemm_only supports at most 128 streams (asked for 200)"),
        (128, None),
        (1, None),
        (0, "large_gemm_only needs at least 1 streams (asked for 0)"),
    ],
)
def test_a_stream_count_outside_a_workloads_range_is_skipped_saying_which_bound(n, reason):
    assert SPECS["large_gemm_only"].stream_skip_reason(n) == reason
