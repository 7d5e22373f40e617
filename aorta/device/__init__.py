"""The device layer: the one module through which accelerator calls go.

Backends: ``cuda`` (NVIDIA), ``rocm`` (AMD; PyTorch's ``torch.cuda`` is HIP there) and ``cpu``. The CPU
backend has the same interface so every benchmark runs on a machine without a GPU: its streams are
distinct no-op objects and its events read the host clock when recorded, which is the completion time
because CPU ops are synchronous.

Streams: ``torch.cuda.Stream()`` draws from a pool of 32 streams per priority and hands them out
round-robin, so stream 33 is stream 1 again (docs/reference_floors.md). ``Device.streams(n)`` therefore creates
native streams through the runtime (``cudaStreamCreateWithPriority`` / ``hipStreamCreateWithPriority``)
and wraps them with ``torch.cuda.ExternalStream``; it checks that the handles really are distinct.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import torch

from aorta.device import profiler_detach

BACKENDS = ("auto", "cuda", "rocm", "cpu")

# Decided when aorta.device is imported, before any profiler starts and before the gate reads the scheduling
# environment: CUPTI detached when each profiler session stops (aorta/device/profiler_detach.py). By the torch
# build, not the device in use, so every aorta process of one install records the same setting.
PROFILER_DETACH = profiler_detach.apply(
    profiler_detach.build_backend(torch.version.cuda, getattr(torch.version, "hip", None)), torch.version.cuda
)

# Environment variables that change how work is scheduled or communicated (recorded with every run). Named
# one by one outside the NCCL/RCCL/HSA families: a broad HIP_* or CUDA_* would take in install paths
# (HIP_PATH, CUDA_HOME), which differ between stacks without changing how the work runs.
SCHEDULING_ENV_PATTERN = re.compile(
    r"^(CUDA_DEVICE_MAX_CONNECTIONS|CUDA_VISIBLE_DEVICES|CUDA_LAUNCH_BLOCKING|CUDA_MODULE_LOADING|"
    r"CUDA_SCALE_LAUNCH_QUEUES|CUBLAS_WORKSPACE_CONFIG|GPU_MAX_HW_QUEUES|HIP_VISIBLE_DEVICES|"
    r"HIP_LAUNCH_BLOCKING|HIP_FORCE_DEV_KERNARG|AMD_SERIALIZE_KERNEL|AMD_SERIALIZE_COPY|ROCR_VISIBLE_DEVICES|"
    r"TORCH_BLAS_PREFER_HIPBLASLT|TORCH_BLAS_PREFER_CUBLASLT|TORCH_ALLOW_TF32_CUBLAS_OVERRIDE|TEARDOWN_CUPTI|"
    r"NCCL_.*|RCCL_.*|HSA_.*|TORCH_NCCL_.*|PYTORCH_.*ALLOC.*)$"
)


class DeviceUnavailable(RuntimeError):
    """The requested backend cannot be used on this machine."""


class StreamLimit(RuntimeError):
    """Fewer distinct streams can be had than were asked for."""


class SizeTooLarge(MemoryError):
    """A workload's buffers would not fit in the memory that is free: refused before allocating, because
    an allocation past the host's memory is not always an error (overcommit) but can end the process."""


def detect_backend(requested: str = "auto") -> str:
    """Resolve ``auto`` to the backend torch can use here; check an explicit request is usable."""
    if requested not in BACKENDS:
        raise ValueError(f"unknown device backend {requested!r}; allowed: {', '.join(BACKENDS)}")
    gpu_vendor = "rocm" if getattr(torch.version, "hip", None) else "cuda"
    has_gpu = torch.cuda.is_available()
    if requested == "auto":
        return gpu_vendor if has_gpu else "cpu"
    if requested == "cpu":
        return "cpu"
    if not has_gpu:
        raise DeviceUnavailable(f"--aorta-device={requested}: torch sees no GPU on this machine")
    if requested != gpu_vendor:
        raise DeviceUnavailable(
            f"--aorta-device={requested}: this torch build is for {gpu_vendor} "
            f"(torch {torch.__version__}, hip={torch.version.hip}, cuda={torch.version.cuda})"
        )
    return requested


@dataclass(frozen=True)
class DeviceProperties:
    backend: str
    name: str
    arch: str
    compute_units: int | None  # SMs on NVIDIA, CUs on AMD
    l2_cache_bytes: int | None
    total_memory_bytes: int | None
    device_count: int
    # The GPU's own identity (torch's ``uuid``: the same on NVIDIA and AMD builds), None where the build has
    # none: the gate tells machines apart by it (aorta.record.machines.machine_id).
    uuid: str | None = None

    def as_dict(self) -> dict:
        return asdict(self)


class CpuStream:
    """A stand-in stream: distinct object, no ordering effect (CPU ops are synchronous)."""

    def __init__(self, index: int, priority: int = 0):
        self.index = index
        self.priority = priority

    def wait_stream(self, other: CpuStream) -> None:  # ordering is implicit on the CPU
        return None

    def wait_event(self, event: CpuEvent) -> None:
        return None


class CpuEvent:
    """Host-clock event: the time at which it was recorded (= completion, ops being synchronous)."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter):
        self._clock = clock
        self.t_s: float | None = None

    def record(self, stream: object | None = None) -> None:
        self.t_s = self._clock()

    def elapsed_time(self, end: CpuEvent) -> float:
        if self.t_s is None or end.t_s is None:
            raise RuntimeError("elapsed_time on an event that was never recorded")
        return (end.t_s - self.t_s) * 1e3


class Device:
    """One accelerator (or the CPU). Passed to whatever needs device calls; never a module global."""

    def __init__(self, backend: str, index: int = 0):
        self.backend = backend
        self.index = index
        self.is_gpu = backend in ("cuda", "rocm")
        self.torch_device = torch.device("cuda", index) if self.is_gpu else torch.device("cpu")
        self._native: dict[int, list] = {}  # priority -> streams created so far (kept for reuse)
        self._cpu_streams: list[CpuStream] = []
        self._captured_events: list | None = None  # events recorded in the graph being captured, if any
        self.launch_log: Any = (
            None  # a LaunchLog noting spins while one iteration is logged (aorta/hw_queue/launch_log.py)
        )
        self.profiler_detach = PROFILER_DETACH if self.is_gpu else None
        if self.is_gpu:
            torch.cuda.set_device(index)

    @staticmethod
    def visible_gpu_count() -> int:
        """GPUs this process can see (0 without a GPU); ranks pick their device index from it."""
        return torch.cuda.device_count() if torch.cuda.is_available() else 0

    @classmethod
    def open(cls, requested: str = "auto", index: int = 0) -> Device:
        return cls(detect_backend(requested), index)

    def __repr__(self) -> str:
        return f"Device({self.backend!r}, index={self.index})"

    # ----------------------------------------------------------------- properties
    def properties(self) -> DeviceProperties:
        if not self.is_gpu:
            import platform

            return DeviceProperties(
                "cpu",
                platform.processor() or platform.machine(),
                platform.machine(),
                os.cpu_count(),
                None,
                None,
                1,
            )
        p = torch.cuda.get_device_properties(self.index)
        arch = getattr(p, "gcnArchName", "") if self.backend == "rocm" else f"sm_{p.major}{p.minor}"
        return DeviceProperties(
            backend=self.backend,
            name=p.name,
            arch=arch or f"{p.major}.{p.minor}",
            compute_units=p.multi_processor_count,
            l2_cache_bytes=getattr(p, "L2_cache_size", None),
            total_memory_bytes=p.total_memory,
            device_count=torch.cuda.device_count(),
            uuid=str(p.uuid) if getattr(p, "uuid", None) is not None else None,
        )

    def software(self) -> dict:
        """Versions of the stack under the benchmark (torch, CUDA or HIP, NCCL or RCCL)."""
        info: dict = {
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "hip": getattr(torch.version, "hip", None),
        }
        if self.is_gpu:
            with contextlib.suppress(Exception):
                v = torch.cuda.nccl.version()
                info["rccl" if self.backend == "rocm" else "nccl"] = (
                    ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
                )
        return info

    def math_libraries(self) -> dict[str, str]:
        """Versions of the math libraries the GPU kernels come from (cuDNN/MIOpen, cuBLAS and cuBLASLt, or
        rocBLAS and hipBLASLt), each "unknown (why)" where the library does not say. Empty on CPU."""
        if not self.is_gpu:
            return {}
        out: dict[str, str] = {}
        dnn = "miopen" if self.backend == "rocm" else "cudnn"
        try:
            out[dnn] = str(torch.backends.cudnn.version())
        except Exception as exc:  # a build without it
            out[dnn] = f"unknown ({type(exc).__name__}: {exc})"
        maps = _process_maps()
        if self.backend == "cuda":
            out["cublas"] = _library_version(maps, "libcublas.so", _cublas_version)
            out["cublaslt"] = _library_version(maps, "libcublasLt.so", _cublaslt_version)
        else:
            out["rocblas"] = _library_version(maps, "librocblas.so", _rocblas_version)
            out["hipblaslt"] = _library_version(maps, "libhipblaslt.so", None)
        return out

    def pci_bus_id(self) -> str | None:
        """``"00000000:19:00.0"`` (NVML / nvidia-smi form) of this GPU, so telemetry reads the same GPU
        torch uses whatever ``CUDA_VISIBLE_DEVICES`` renumbered; ``None`` on CPU or an older torch."""
        if not self.is_gpu:
            return None
        p = torch.cuda.get_device_properties(self.index)
        domain, bus, dev = (getattr(p, f"pci_{k}_id", None) for k in ("domain", "bus", "device"))
        if bus is None or dev is None:
            return None
        return f"{domain or 0:08X}:{bus:02X}:{dev:02X}.0"

    @staticmethod
    def scheduling_env(environ: dict | None = None) -> dict[str, str]:
        env = os.environ if environ is None else environ
        return {k: env[k] for k in sorted(env) if SCHEDULING_ENV_PATTERN.match(k)}

    def hardware_queue_setting(self) -> dict[str, str]:
        """The env var that sets how many hardware queues streams map onto, and its value in force."""
        if self.backend == "rocm":
            return {"GPU_MAX_HW_QUEUES": os.environ.get("GPU_MAX_HW_QUEUES", "default (4)")}
        if self.backend == "cuda":
            return {
                "CUDA_DEVICE_MAX_CONNECTIONS": os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS", "default (8)")
            }
        return {}

    # ----------------------------------------------------------------- streams
    def streams(self, n: int, priority: int = 0) -> list:
        """``n`` really distinct streams at ``priority`` (lower number = higher priority on CUDA/HIP)."""
        if n < 1:
            raise ValueError(f"stream count must be >= 1, got {n}")
        if not self.is_gpu:
            while len(self._cpu_streams) < n:
                self._cpu_streams.append(CpuStream(len(self._cpu_streams), priority))
            return self._cpu_streams[:n]
        made = self._native.setdefault(priority, [])
        while len(made) < n:
            made.append(self._new_native_stream(priority))
        out = made[:n]
        handles = {self.stream_handle(s) for s in out}
        if len(handles) != n:
            raise StreamLimit(f"asked for {n} distinct streams, got {len(handles)} distinct handles")
        return out

    def priority_range(self) -> tuple[int, int]:
        """(lowest priority, highest priority) as the runtime numbers them; (0, 0) on CPU."""
        if not self.is_gpu:
            return (0, 0)
        # torch's stubs declare priority_range as an instance method and its result as a plain tuple;
        # it is a staticmethod returning (least, greatest) ints.
        return tuple(torch.cuda.Stream.priority_range())  # type: ignore[call-arg, return-value]

    def _new_native_stream(self, priority: int):
        create = _native_stream_creator(self.backend)
        if create is None:
            # No runtime binding: the torch pool is distinct only up to 32 streams per priority.
            s = torch.cuda.Stream(device=self.torch_device, priority=priority)
            return s
        handle = create(priority)
        return torch.cuda.ExternalStream(handle, device=self.torch_device)

    def stream_handle(self, stream) -> int:
        if not self.is_gpu:
            return id(stream)
        return int(stream.cuda_stream)

    def distinct_stream_count(self, streams: list) -> int | None:
        """Distinct native handles among ``streams``; ``None`` on CPU (no hardware streams there)."""
        if not self.is_gpu:
            return None
        return len({self.stream_handle(s) for s in streams})

    def current_stream(self):
        if not self.is_gpu:
            return _CPU_ORIGIN
        return torch.cuda.current_stream(self.torch_device)

    def use(self, stream):
        """Context manager that makes ``stream`` current (cheap: tiny-kernel loops switch per launch)."""
        if not self.is_gpu:
            return contextlib.nullcontext()
        return _StreamSwitch(stream, self.torch_device)

    def wait_event(self, stream, event) -> None:
        """``stream`` waits for ``event``, except across a graph capture's edge, where the wait is dropped:

        - while a graph is being captured, an event recorded before the capture (a capture may not depend on
          work outside it);
        - outside a capture, an event recorded inside one: it exists only in its graph (CUDA rejects the wait
          with "invalid argument"). A step that keeps its last call's events (a buffer's last reader) meets
          these when it runs eagerly after a capture (the labelled pass beside a graph replay).

        Either way the order the wait stood for holds: every replay runs after the work enqueued before it
        on the origin stream and ends joined into it, and each round forks every stream from the origin."""
        if self._captured_events is not None:
            if not any(e is event for e in self._captured_events):
                return
        elif getattr(event, GRAPH_ONLY, False):
            return
        stream.wait_event(event)

    def wait_stream(self, waiter, waitee) -> None:
        waiter.wait_stream(waitee)

    # ----------------------------------------------------------------- events / sync
    def event(self, timing: bool = True):
        if not self.is_gpu:
            return CpuEvent()
        return torch.cuda.Event(enable_timing=timing)

    def record_event(self, stream):
        """A non-timing event recorded on ``stream`` now: a later ``wait_event`` orders work after exactly
        what ``stream`` had enqueued at this point (a ``wait_stream`` would also wait for anything later)."""
        event = CpuEvent() if not self.is_gpu else torch.cuda.Event(enable_timing=False)
        event.record(stream)
        if self._captured_events is not None:
            self._captured_events.append(event)
            setattr(event, GRAPH_ONLY, True)
        return event

    def synchronize(self) -> None:
        if self.is_gpu:
            torch.cuda.synchronize(self.torch_device)

    def settle_profiler(self) -> float:
        """After a profiler session stops, where CUPTI is to detach (aorta/device/profiler_detach.py): Kineto
        detaches it from a thread that waits for the next CUDA call to return, so this makes CUDA calls for
        ``profiler_detach.SETTLE_S`` to let it finish here, not in the next benchmark's timed rounds or while
        the process exits. Returns the seconds spent (0 where nothing is to detach)."""
        if not (self.is_gpu and profiler_detach.detaching()):
            return 0.0
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < profiler_detach.SETTLE_S:
            torch.cuda.synchronize(self.torch_device)
            time.sleep(0.002)
        return time.perf_counter() - t0

    def spin(self, cycles: int) -> None:
        """Enqueue one single-thread kernel that spins ``cycles`` GPU clock cycles (no memory traffic).

        On the CPU backend the host busy-waits ``cycles`` nanoseconds instead: the CPU stand-in for
        a long one-block kernel, synchronous like every CPU op.
        """
        if self.launch_log is not None:
            self.launch_log.note("spin")
        if self.is_gpu:
            torch.cuda._sleep(int(cycles))
        else:
            deadline = time.perf_counter_ns() + int(cycles)
            while time.perf_counter_ns() < deadline:
                pass

    # ----------------------------------------------------------------- kernel timestamps
    def mark(self, name: str):
        """A labelled host range (``torch.profiler.record_function``) around launches; the profiler files the
        kernels launched inside it under ``name`` (aorta/timeline/kernel_timeline.py)."""
        if not self.is_gpu:
            return contextlib.nullcontext()
        return torch.profiler.record_function(name)

    # ----------------------------------------------------------------- memory
    def reset_peak_memory(self) -> None:
        if self.is_gpu:
            torch.cuda.reset_peak_memory_stats(self.torch_device)

    def peak_memory_bytes(self) -> int | None:
        return torch.cuda.max_memory_allocated(self.torch_device) if self.is_gpu else None

    def host_tensor(self, tensor: torch.Tensor) -> torch.Tensor:
        """``tensor`` (on the host) in page-locked memory on a GPU, so copies run async on a copy engine.

        On CPU there is no device to copy to: the plain tensor is returned.
        """
        if not self.is_gpu:
            return tensor
        return tensor.pin_memory()

    def free_memory(self) -> None:
        if self.is_gpu:
            torch.cuda.empty_cache()

    def check_fits(self, device_bytes: int, host_bytes: int) -> None:
        """Raise ``SizeTooLarge`` when ``device_bytes`` on the device and ``host_bytes`` of host memory
        are more than is free now (on the CPU backend both come out of host memory)."""
        host_free = _host_available_bytes()
        if self.is_gpu:
            dev_free, _ = torch.cuda.mem_get_info(self.torch_device)
            if device_bytes > dev_free:
                raise SizeTooLarge(
                    f"needs {device_bytes / 2**30:.1f} GiB on {self.torch_device}, "
                    f"{dev_free / 2**30:.1f} GiB free"
                )
        else:
            host_bytes += device_bytes
        if host_free is not None and host_bytes > host_free:
            raise SizeTooLarge(
                f"needs {host_bytes / 2**30:.1f} GiB of host memory, {host_free / 2**30:.1f} GiB available"
            )

    # ----------------------------------------------------------------- graphs
    def supports_graphs(self) -> bool:
        return self.is_gpu

    def capture_graph(self, fn: Callable[[], None], warmup: int = 2):
        """Capture ``fn`` (which may fork onto other streams and must join back) as one graph.

        Returns the ``replay`` callable. Warm-up runs on a side stream first, as PyTorch requires.
        """
        if not self.is_gpu:
            raise DeviceUnavailable("CUDA/HIP graphs need a GPU")
        side = torch.cuda.Stream(device=self.torch_device)
        side.wait_stream(torch.cuda.current_stream(self.torch_device))  # inputs written on the origin stream
        with torch.cuda.stream(side):
            for _ in range(warmup):
                fn()
        torch.cuda.current_stream(self.torch_device).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        self._captured_events = []
        try:
            with torch.cuda.graph(graph):
                fn()
        finally:
            self._captured_events = None
        return graph.replay

    def is_out_of_memory(self, exc: BaseException) -> bool:
        oom = getattr(torch, "OutOfMemoryError", None) or getattr(torch.cuda, "OutOfMemoryError", None)
        classes: tuple[type[BaseException], ...] = (MemoryError, oom) if oom is not None else (MemoryError,)
        text = str(exc).lower()
        return isinstance(exc, classes) or "out of memory" in text or "can't allocate memory" in text


_CPU_ORIGIN = CpuStream(-1)
GRAPH_ONLY = "aorta_recorded_in_graph"  # set on an event recorded while a graph was being captured


class _StreamSwitch:
    """``torch.cuda.stream`` without its per-call device checks: set, run, restore the previous stream."""

    __slots__ = ("stream", "device", "prev")

    def __init__(self, stream, device):
        self.stream, self.device, self.prev = stream, device, None

    def __enter__(self):
        self.prev = torch.cuda.current_stream(self.device)
        if self.prev != self.stream:
            torch.cuda.set_stream(self.stream)
        return self.stream

    def __exit__(self, *exc):
        if self.prev != self.stream:
            torch.cuda.set_stream(self.prev)
        return False


# --------------------------------------------------------------------------- native stream creation
_NON_BLOCKING = 0x1  # cudaStreamNonBlocking == hipStreamNonBlocking


def _native_stream_creator(backend: str) -> Callable[[int], int] | None:
    """A function ``priority -> native stream handle``, or ``None`` when no runtime binding loads."""
    if backend == "cuda":
        try:
            from cuda.bindings import runtime as cudart
        except ImportError:
            cudart = None
        if cudart is not None:

            def create_cuda(priority: int) -> int:
                err, stream = cudart.cudaStreamCreateWithPriority(_NON_BLOCKING, priority)
                if int(err) != 0:
                    raise RuntimeError(f"cudaStreamCreateWithPriority failed: {err}")
                return int(stream)

            return create_cuda
        return _ctypes_creator(
            ["libcudart.so", "libcudart.so.13", "libcudart.so.12"], "cudaStreamCreateWithPriority"
        )
    if backend == "rocm":
        return _ctypes_creator(
            ["libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.7"], "hipStreamCreateWithPriority"
        )
    return None


def _ctypes_creator(libnames: list[str], symbol: str) -> Callable[[int], int] | None:
    for name in libnames:
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        fn = getattr(lib, symbol, None)
        if fn is None:
            continue
        fn.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint, ctypes.c_int]
        fn.restype = ctypes.c_int

        def create(priority: int, fn=fn) -> int:
            handle = ctypes.c_void_p()
            rc = fn(ctypes.byref(handle), _NON_BLOCKING, priority)
            if rc != 0:
                raise RuntimeError(f"{symbol} failed with code {rc}")
            if handle.value is None:
                raise RuntimeError(f"{symbol} returned a null stream")
            return int(handle.value)

        return create
    return None


def _host_available_bytes() -> int | None:
    """MemAvailable (free + reclaimable cache) on Linux, else free pages, else None (unknown)."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # not on every platform
        return None


def _process_maps() -> str:
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def loaded_library(maps_text: str, stem: str) -> str | None:
    """The path of the loaded shared library whose file name starts with ``stem`` (``libcublas.so`` matches
    ``libcublas.so.13``, not ``libcublasLt.so.13``), from ``/proc/self/maps`` text; None if not loaded."""
    for line in maps_text.splitlines():
        path = line.split(maxsplit=5)[5] if len(line.split(maxsplit=5)) == 6 else ""
        if os.path.basename(path).startswith(stem):
            return path.strip()
    return None


def _cublas_version(lib: ctypes.CDLL) -> str:
    parts = []
    for prop in (0, 1, 2):  # libraryPropertyType: MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
        value = ctypes.c_int()
        if lib.cublasGetProperty(prop, ctypes.byref(value)) != 0:
            raise RuntimeError("cublasGetProperty failed")
        parts.append(str(value.value))
    return ".".join(parts)


def _cublaslt_version(lib: ctypes.CDLL) -> str:
    lib.cublasLtGetVersion.restype = ctypes.c_size_t
    v = int(lib.cublasLtGetVersion())  # major * 10000 + minor * 100 + patch
    return f"{v // 10000}.{v // 100 % 100}.{v % 100}"


def _rocblas_version(lib: ctypes.CDLL) -> str:
    buf = ctypes.create_string_buffer(256)
    if lib.rocblas_get_version_string(buf, ctypes.c_size_t(len(buf))) != 0:
        raise RuntimeError("rocblas_get_version_string failed")
    return buf.value.decode()


def _library_version(maps_text: str, stem: str, read: Callable[[ctypes.CDLL], str] | None) -> str:
    """The library's own version call, on the copy this process loaded; "unknown (why)" otherwise."""
    path = loaded_library(maps_text, stem)
    if path is None:
        return f"unknown ({stem} is not loaded in this process)"
    if read is None:
        return f"unknown (it reports its version only through a handle; loaded file {os.path.basename(path)})"
    try:
        return read(ctypes.CDLL(path))
    except Exception as exc:  # a missing symbol or a failed call: say so, never guess
        return f"unknown ({type(exc).__name__}: {exc}; loaded file {os.path.basename(path)})"


def driver_version(backend: str) -> str | None:
    """The GPU driver's version (NVML or nvidia-smi on NVIDIA; amdsmi or rocm-smi on AMD); None if unknown."""
    if backend == "cuda":
        try:
            import pynvml

            pynvml.nvmlInit()
            try:
                v = pynvml.nvmlSystemGetDriverVersion()
                return v.decode() if isinstance(v, bytes) else str(v)
            finally:
                pynvml.nvmlShutdown()
        except Exception:
            return _tool_output(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
    if backend == "rocm":
        try:
            import amdsmi

            amdsmi.amdsmi_init()
            try:
                handle = amdsmi.amdsmi_get_processor_handles()[0]
                return str(amdsmi.amdsmi_get_gpu_driver_info(handle).get("driver_version"))
            finally:
                amdsmi.amdsmi_shut_down()
        except Exception:
            out = _tool_output(["rocm-smi", "--showdriverversion"])
            m = re.search(r"Driver version:\s*(\S+)", out or "")
            return m.group(1) if m else None
    return None


def _tool_output(cmd: list[str]) -> str | None:
    import subprocess

    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return out.splitlines()[0].strip() if out else None
