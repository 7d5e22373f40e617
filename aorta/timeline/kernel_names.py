"""Kernel names as one kernel per name: the profiler's raw names normalised, and the op family each belongs
to (pure: no torch).

A profiler names a kernel by its full C++ signature, and the same kernel comes out under several names:
the parameter list repeats the template (``(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)``),
lambdas are numbered by the compiler (``{lambda()#3}``), anonymous namespaces are spelled out, a collective's
argument storage carries its size (``ncclDevKernelArgsStorage<4096ul>``) and a torch release moves a helper
from ``at::detail::Array<char*, 3>`` to ``std::array<char*, 3ul>``. ``normalise`` drops that noise and keeps
what selects the kernel: its function, its template (vector width, functor, data type) and, for library GEMMs
(cuBLAS ``sm90_xmma_gemm_...``, ``nvjet_...``, CUTLASS, rocBLAS/hipBLASLt Tensile ``Cijk_...``), the whole
generated name, whose tile sizes are the selection.

``family`` groups kernels that do the same op, so a library that picks another kernel for it is seen as a
swap (old name gone, new name in its place) rather than as unrelated kernels: ``gemm``, ``collective:<kind>``
(aorta/timeline/trace_events.py's kinds), ``memory``, or the kernel's function with its functor
(``vectorized_elementwise_kernel[CUDAFunctor_add]``).
"""

from __future__ import annotations

import hashlib
import re

from aorta.timeline.trace_events import COMM_KINDS, MEMORY, classify_kernel, is_memory_kernel

MAX_NAME_CHARS = (
    120  # longer normalised names keep their head and a digest of the whole (Tensile names run 400+)
)
GEMM = "gemm"
_GEMM = re.compile(
    r"gemm|xmma|cutlass|nvjet|^Cijk_|cublas|hipblaslt|wmma|matmul|_mma_|tensorop", re.IGNORECASE
)
_LAMBDA = re.compile(r"\{lambda\([^(){}]*\)#\d+\}")
_ANON = "(anonymous namespace)::"
_INT_SUFFIX = re.compile(r"\b(\d+)(?:ul|ull|u|l|ll)\b", re.IGNORECASE)
_ARRAY = re.compile(r"(?:at::detail::Array|std::array)<")
_FUNCTOR = re.compile(r"([A-Za-z_][A-Za-z0-9_]*(?:Functor|functor|_kernel_cuda|Op)[A-Za-z0-9_]*)")
_LAMBDA_HOLDER = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\(")  # the function whose lambda is the op
_OPENERS, _CLOSERS = "<({[", ">)}]"


def _cut_parameters(name: str) -> str:
    """The name up to its parameter list: the first '(' outside every <>, (), {} and []. A name whose
    brackets do not balance (a truncated one, an ``operator<``) is returned whole."""
    depth = 0
    for i, ch in enumerate(name):
        if ch in _OPENERS:
            if ch == "(" and depth == 0 and i > 0:
                return name[:i]
            depth += 1
        elif ch in _CLOSERS:
            depth -= 1
            if depth < 0:
                return name
    return name


def normalise(raw: str) -> str:
    """One name per kernel: ``void ns::k<4, F<float>, std::array<char*, 1ul> >(int, ...)`` ->
    ``ns::k<4,F<float>,Array<char*,1>>``; names longer than ``MAX_NAME_CHARS`` keep their head and a digest
    of the whole, so two long names stay apart."""
    name = _normal_form(raw)
    if len(name) > MAX_NAME_CHARS:
        digest = hashlib.sha1(name.encode("utf-8")).hexdigest()[:8]
        name = f"{name[: MAX_NAME_CHARS - 10]}~{digest}"
    return name


def _normal_form(raw: str) -> str:
    name = raw.strip()
    if name.startswith("void "):
        name = name[5:]
    name = name.replace(_ANON, "")
    name = _LAMBDA.sub("{lambda}", name)
    name = _cut_parameters(name).strip()
    name = _ARRAY.sub("Array<", name)
    name = _INT_SUFFIX.sub(r"\1", name)
    name = re.sub(r"\s+", "", name) if "<" in name else name
    if name.endswith(".kd"):  # ROCm code-object symbol suffix
        name = name[:-3]
    return name or raw.strip()


def _function(name: str) -> str:
    """The kernel's function without namespaces or template: ``at::native::k<...>`` -> ``k``."""
    head = name.split("<", 1)[0]
    return head.rsplit("::", 1)[-1] or head


def family(raw: str, category: str = "kernel", collective_name: str | None = None) -> str:
    """The op a kernel does, for pairing a kernel that disappeared with the one that took its place."""
    if category in ("gpu_memcpy", "gpu_memset") or is_memory_kernel(raw):
        return MEMORY
    kind = classify_kernel(raw, collective_name)
    if kind in COMM_KINDS:
        return f"collective:{kind}"
    name = _normal_form(raw)
    if _GEMM.search(name):
        return GEMM
    function = _function(name)
    template = name[len(name.split("<", 1)[0]) :]
    op = _FUNCTOR.search(template) or _LAMBDA_HOLDER.search(template)
    return f"{function}[{op.group(1)}]" if op else function


def is_collective(family_name: str) -> bool:
    return family_name.startswith("collective:")
