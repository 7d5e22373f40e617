"""The profiler leaves nothing behind when it stops (pure: the rule; ``apply`` writes the environment).

Kineto keeps CUPTI attached to the process after a profiler session stops unless ``TEARDOWN_CUPTI=1``
(libkineto/src/CuptiActivityApi.cpp, ``cuptiTearDown_``; pytorch/pytorch issue 144455). Attached, CUPTI's
callbacks stay on every launch: a benchmark timed after another benchmark's kernel pass in the same process
ran with them. Measured on an H200 (docs/measurements.md, "The profiler's residue"): in the gate's full run,
which runs kernel passes, ``tiny_kernel_stress`` graph replays at 16 streams took 1.47 ms per replay, in its
lean runs, which run none, 0.71-0.73 ms; one figure, two answers by run kind, and the full run the outlier of
every pool it was in.

So before any profiler starts, aorta asks Kineto to detach CUPTI when the session stops. Two exceptions,
both kept and said in the run record: a value the user set is left as set, and builds with CUDA before
12.6, where a CUDA graph and CUPTI's re-attach crashed (torch/profiler/profiler.py applies the same bound),
are left attached. ROCm builds trace through roctracer/rocprofiler, which this variable does not touch.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

TEARDOWN_ENV = "TEARDOWN_CUPTI"
SET_BY_AORTA = "AORTA_SET_TEARDOWN_CUPTI"  # the value aorta set, so it is not taken for the user's
FIRST_SAFE_CUDA = (12, 6)  # torch's own bound for CUPTI teardown beside CUDA graphs
# Kineto detaches CUPTI from a thread that waits for the next CUDA call to return (CuptiActivityApi.cpp,
# teardownContext): CUDA calls for this long after each profiler session let it finish there and then.
SETTLE_S = 0.1


def _cuda_tuple(version: str | None) -> tuple[int, ...] | None:
    try:
        return tuple(int(p) for p in str(version).split(".")[:2])
    except ValueError:
        return None


def decide(
    backend: str, cuda_version: str | None, environ: MutableMapping[str, str]
) -> tuple[str | None, str]:
    """The value ``TEARDOWN_CUPTI`` should take (None: leave the environment alone) and why, in one line."""
    if backend != "cuda":
        return None, f"{backend} backend: CUPTI is not used"
    if TEARDOWN_ENV in environ:
        return None, f"{TEARDOWN_ENV}={environ[TEARDOWN_ENV]} set by the user: kept"
    version = _cuda_tuple(cuda_version)
    if version is None or version < FIRST_SAFE_CUDA:
        return None, (
            f"CUDA {cuda_version}: CUPTI stays attached after a kernel pass (teardown beside CUDA graphs needs "
            f"CUDA >= {FIRST_SAFE_CUDA[0]}.{FIRST_SAFE_CUDA[1]}); figures timed after a kernel pass in the same "
            "process carry its callbacks"
        )
    return "1", f"{TEARDOWN_ENV}=1: the profiler detaches CUPTI when each kernel pass stops"  # as in apply


def detaching(environ: MutableMapping[str, str] | None = None) -> bool:
    """Whether a stopped profiler session detaches CUPTI in this process."""
    return (os.environ if environ is None else environ).get(TEARDOWN_ENV) == "1"


def apply(backend: str, cuda_version: str | None, environ: MutableMapping[str, str] | None = None) -> str:
    """Set the variable where ``decide`` says so (before any profiler starts); return the reason line. The
    setting is marked as aorta's (``SET_BY_AORTA``), so a second decision, here or in a child process that
    inherits the environment, gives the same reason rather than calling it the user's."""
    env = os.environ if environ is None else environ
    if env.get(SET_BY_AORTA) == env.get(TEARDOWN_ENV, "") != "":
        return f"{TEARDOWN_ENV}={env[TEARDOWN_ENV]}: the profiler detaches CUPTI when each kernel pass stops"
    value, why = decide(backend, cuda_version, env)
    if value is not None:
        env[TEARDOWN_ENV] = env[SET_BY_AORTA] = value
    return why


def build_backend(cuda_version: str | None, hip_version: str | None) -> str:
    """The backend this torch build was made for (``cuda``, ``rocm`` or ``cpu``), whatever device runs."""
    return "rocm" if hip_version else "cuda" if cuda_version else "cpu"
