"""copy_compute_overlap: GEMMs beside host-to-device, device-to-host and device-to-device copies.

``mode="overlap"``: GEMMs run on the compute streams while the three copies (``copy_mb`` MiB each,
split into one chunk per copy stream) run on high-priority copy streams (the highest priority the
runtime offers, from ``Device.priority_range``). With ``n`` streams, ``max(1, n // 4)`` copy; the rest
compute (one stream: both share it).

``mode="serial"``: the same work (sized for ``work_streams`` streams) on one stream, GEMMs first and
the copies after: the time without overlap. The benchmark runs it first, through the same runner and
timing loop, and passes it to the overlapped run as its reference (``reference_metrics``), which then
reports the saving. Whether the copy engines really ran beside compute is read from the kernel
timestamps: the share of copy time during which a GEMM ran, against ``COPY_BESIDE_THRESHOLD``.
Copy rates per direction come from the serial variant's copy kernels (one stream, copies one at a time).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import replace

import torch

from aorta.hw_queue.parts.stage_intervals import (
    CPU_SERIAL_REASON,
    StageLog,
    busy_ms_per_round,
    label_overlap,
    rate_samples,
)
from aorta.hw_queue.specs import SPECS
from aorta.hw_queue.stream_work import StreamWork, WorkSpec, every_stream
from aorta.hw_queue.workload import Metric, Workload
from aorta.stats import median

MODES = ("overlap", "serial")
COPIES = ("h2d", "d2h", "d2d")
COPY_BESIDE_THRESHOLD = 0.5  # more than half the copy time with a GEMM running beside it
MIB = 1 << 20

# GEMM (M = N = K) per size and dtype, base GEMM count, default MiB per copy. Full: a 4096^3 bf16 GEMM
# is ~0.2 ms on an H100, 16 of them ~3 ms; 64 MiB over PCIe Gen5 is ~1.3 ms each way. fp32 without
# TF32 runs ~52 TFLOP/s, so its GEMMs are 2048^3.
GEMM_SIDE = {("full", "bf16"): 4096, ("full", "fp32"): 2048, ("smoke", "bf16"): 32, ("smoke", "fp32"): 32}
BASE_GEMMS = {"full": 16, "smoke": 4}
DEFAULT_COPY_MB = {"full": 64.0, "smoke": 1.0}


def split_streams(n: int) -> tuple[list[int], list[int]]:
    """(compute stream indices, copy stream indices) for ``n`` streams in overlap mode."""
    if n == 1:
        return [0], [0]
    n_copy = max(1, n // 4)
    return list(range(n - n_copy)), list(range(n - n_copy, n))


class CopyComputeOverlap(Workload):
    spec = SPECS["copy_compute_overlap"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)  # checks the parameters' names and types against the spec
        mode = self.params.get("mode") or "overlap"
        work_streams, copy_mb = self.params.get("work_streams"), self.params.get("copy_mb")
        if mode not in MODES:
            raise ValueError(f"copy_compute_overlap: mode must be one of {MODES}, got {mode!r}")
        if copy_mb is not None and not copy_mb > 0:
            raise ValueError(f"copy_compute_overlap: copy_mb must be > 0, got {copy_mb!r}")
        if mode == "overlap" and work_streams not in (None, self.n_streams):
            raise ValueError(
                f"copy_compute_overlap: work_streams={work_streams} is for the serial variant; "
                f"the overlapped run does the work of its own {self.n_streams} streams"
            )
        self.mode = mode
        self.work_streams = work_streams or self.n_streams
        self.copy_mb = copy_mb if copy_mb is not None else DEFAULT_COPY_MB[self.size]
        self.beside: dict = {}

    # ------------------------------------------------------------------ streams
    def make_streams(self) -> list:
        low, high = self.device.priority_range()
        compute, copy = split_streams(self.n_streams)
        if self.mode == "serial" or self.n_streams == 1 or low == high:
            return self.device.streams(self.n_streams)  # one priority: nothing to ask for
        return self.device.streams(len(compute), priority=low) + self.device.streams(len(copy), priority=high)

    # ------------------------------------------------------------------ setup
    def setup(self) -> None:
        dev = self.device.torch_device
        gen = self.generator()
        cpu_gen = torch.Generator().manual_seed(self.seed)
        w_compute, w_copy = split_streams(self.work_streams)
        if self.mode == "overlap":
            self.compute_idx, self.copy_idx = split_streams(self.n_streams)
        else:
            self.compute_idx, self.copy_idx = [0] * len(w_compute), [0] * len(w_copy)
        side = self.params.get("gemm_side") or GEMM_SIDE[(self.size, self.dtype_name)]
        self.side = side
        self.n_gemms = max(BASE_GEMMS[self.size], len(w_compute))  # at least one GEMM per compute stream
        self.a = [self.randn(side, side, gen=gen) for _ in range(self.n_gemms)]  # (M, K)
        self.b = [self.randn(side, side, gen=gen, scale=side**-0.5) for _ in range(self.n_gemms)]  # (K, N)
        self.c = self.randn(self.n_gemms, side, side, gen=gen).zero_()  # (G, M, N)
        self.copy_bytes = max(len(w_copy), int(self.copy_mb * MIB))
        # Device: h2d_dst, d2h_src, d2d_src, d2d_dst; host: h2d_src, d2h_dst (+ one source in flight).
        self.device.check_fits(device_bytes=4 * self.copy_bytes, host_bytes=3 * self.copy_bytes)

        def data(
            n_bytes: int,
        ) -> torch.Tensor:  # never zero, so a poisoned (zeroed) byte cannot pass the check
            return torch.randint(1, 256, (n_bytes,), dtype=torch.uint8, generator=cpu_gen)

        nb = self.copy_bytes
        self.h2d_src = self.device.host_tensor(data(nb))
        self.h2d_dst = torch.empty(nb, dtype=torch.uint8, device=dev)
        self.d2h_src = data(nb).to(dev)
        self.d2h_dst = self.device.host_tensor(torch.zeros(nb, dtype=torch.uint8))
        self.d2d_src = data(nb).to(dev)
        self.d2d_dst = torch.empty(nb, dtype=torch.uint8, device=dev)
        chunks = len(w_copy)
        self.chunks = {
            name: list(zip(src.tensor_split(chunks), dst.tensor_split(chunks)))
            for name, src, dst in (
                ("h2d", self.h2d_src, self.h2d_dst),
                ("d2h", self.d2h_src, self.d2h_dst),
                ("d2d", self.d2d_src, self.d2d_dst),
            )
        }
        self.log = StageLog()

    # ------------------------------------------------------------------ step
    def _labelled(self) -> bool:
        """One stream: each copy and GEMM is its own recorded segment (events on one stream cost nothing)."""
        return self.mode == "serial" or self.n_streams == 1

    def _copies(self, rec) -> None:
        for c in range(len(self.chunks["h2d"])):
            i = self.copy_idx[c]
            for name in COPIES:
                src, dst = self.chunks[name][c]
                with self.log.on(rec, i, name) if self._labelled() else rec.use(i):
                    dst.copy_(src, non_blocking=True)  # pinned host <-> device, or device -> device

    def _gemms(self, rec) -> None:
        for g in range(self.n_gemms):
            i = self.compute_idx[g % len(self.compute_idx)]
            with self.log.on(rec, i, "gemm") if self._labelled() else rec.use(i):
                torch.matmul(self.a[g], self.b[g], out=self.c[g])

    def step(self, rec) -> None:
        # Nothing here depends on anything else: the timing loop's fork and join are the only edges,
        # so the copy streams are free to run beside the GEMMs. Serial: one stream, GEMMs then copies.
        self.log.begin_step()
        if self.mode == "serial":
            self._gemms(rec)
            self._copies(rec)
        else:
            self._copies(rec)  # copies first: the high-priority streams start at the round's start
            self._gemms(rec)

    def expected_work(self) -> WorkSpec:
        # GEMMs and copies over highest-priority streams: every stream runs one or the other.
        return every_stream(self.n_streams, StreamWork(ops=1))

    def result(self):
        return {"gemm": self.c, "h2d": self.h2d_dst, "d2h": self.d2h_dst, "d2d": self.d2d_dst}

    # ------------------------------------------------------------------ figures
    def metrics(self, per_iteration_ms: Sequence[float]) -> list[Metric]:
        # Device time of one iteration: GEMMs and copies overlapped (or serialised, in the serial variant).
        return [Metric("iteration_ms", median(per_iteration_ms), "ms", False, tuple(per_iteration_ms))]

    def unavailable(self) -> dict[str, str]:
        if self.mode == "serial":
            return {"copy_compute_overlap_ratio": "serial variant: compute then copies on one stream"}
        return {}

    def extra_metrics(self, run) -> tuple[list[Metric], dict[str, str]]:
        k = run.iterations_per_round
        rounds = [r.stream_intervals_ms for r in run.rounds]
        unavailable: dict[str, str] = {}
        copy_keys: Sequence[Hashable]
        gemm_keys: Sequence[Hashable]
        if self._labelled():
            groups = [r.label_intervals_ms for r in run.rounds]
            copy_keys, gemm_keys = list(COPIES), ["gemm"]
        else:
            groups = rounds
            copy_keys, gemm_keys = sorted(set(self.copy_idx)), sorted(set(self.compute_idx))
        out: list[Metric] = []
        if self.device.is_gpu or self._labelled():
            # Stream-wide intervals on the CPU run from a stream's first op to the round's end: no busy time.
            for keys, name in ((copy_keys, "copy_busy_ms"), (gemm_keys, "compute_busy_ms")):
                busy = [b / k for b in busy_ms_per_round(groups, keys)]
                out.append(Metric(name, median(busy), "ms", False, tuple(busy)))
            busy = busy_ms_per_round(groups, copy_keys)
            gbps = rate_samples([float(3 * self.copy_bytes * k)] * len(busy), busy, 1e-9)
            if gbps:
                out.append(Metric("copy_gbps", median(gbps), "GB/s", True, tuple(gbps)))
        else:
            unavailable["copy_busy_ms"] = unavailable["copy_gbps"] = (
                "CPU backend: ops are synchronous, so a stream's interval runs from its first op to the "
                "round's end and holds no busy time"
            )
        if self._labelled():
            for name in COPIES:
                busy = busy_ms_per_round(groups, [name])
                gbps = rate_samples([float(self.copy_bytes * k)] * len(busy), busy, 1e-9)
                if gbps:
                    out.append(Metric(f"{name}_gbps", median(gbps), "GB/s", True, tuple(gbps)))
        else:
            for name in COPIES:
                unavailable[f"{name}_gbps"] = (
                    "per-direction copy times need events between copies, which "
                    "would serialize streams sharing a hardware queue; measured in "
                    "the one-stream serial variant"
                )
        unavailable.update(self.unavailable())
        if self.mode == "serial":
            return out, unavailable
        if not self.device.is_gpu:
            unavailable["copy_compute_overlap_ratio"] = CPU_SERIAL_REASON
            unavailable["copy_ran_beside_compute"] = CPU_SERIAL_REASON
            return out, unavailable
        ov = label_overlap(groups, gemm_keys, copy_keys)
        ratio = ov["overlap_ratio"]
        if ratio is None:
            unavailable["copy_compute_overlap_ratio"] = "no copy intervals recorded"
            return out, unavailable
        out.append(
            Metric("copy_compute_overlap_ratio", ratio, "ratio", True, tuple(ov["overlap_ratio_samples"]))
        )
        self.beside = {
            "copy_ran_beside_compute": ratio > COPY_BESIDE_THRESHOLD,
            "copy_compute_overlap_ratio": ratio,
            "threshold_ratio": COPY_BESIDE_THRESHOLD,
        }
        return out, unavailable

    def reference_metrics(self, mine, reference):
        """Against the serial twin (``reference``: the same work on one stream, GEMMs then copies): its time,
        the saving (one sample per timed round of this run) and its per-direction copy rates."""
        if self.mode == "serial":
            return [], {}
        serial = (reference or {}).get("iteration_ms")
        if serial is None or serial.value is None:
            reason = "no serialized run given (the benchmark passes the serial run as reference=)"
            return [], dict.fromkeys(("serial_ms", "saving_ms", "saving_ratio"), reason)
        s, mine_ms = serial.value, mine["iteration_ms"]
        out = [
            replace(serial, name="serial_ms", source="serial twin (reference run)"),
            Metric(
                "saving_ms",
                s - mine_ms.value,
                "ms",
                True,
                tuple(s - x for x in mine_ms.samples),
                from_pass=mine_ms.from_pass,
            ),
            Metric(
                "saving_ratio",
                (s - mine_ms.value) / s,
                "ratio",
                True,
                tuple((s - x) / s for x in mine_ms.samples),
                from_pass=mine_ms.from_pass,
            ),
        ]
        unavailable = {}
        for name in COPIES:  # per-direction rates, from the serial run (one stream, copies one at a time)
            rate = (reference or {}).get(f"{name}_gbps")
            if rate is None:
                unavailable[f"serial_{name}_gbps"] = (
                    "the serial run recorded no per-direction copy rate (kernel timestamps: GPU only)"
                )
            else:
                out.append(replace(rate, name=f"serial_{name}_gbps", source="serial twin (reference run)"))
        return out, unavailable

    def info(self) -> dict:
        low, high = self.device.priority_range()
        info = {
            "mode": self.mode,
            "work_streams": self.work_streams,
            "gemm_m_n_k": self.side,
            "gemms_per_iteration": self.n_gemms,
            "copy_mb": self.copy_mb,
            "copy_bytes": self.copy_bytes,
            "copy_chunks": len(self.chunks["h2d"]),
            "compute_streams": sorted(set(self.compute_idx)),
            "copy_streams": sorted(set(self.copy_idx)),
            "priority_range": [low, high],
            "copy_stream_priority": high if self.mode == "overlap" and self.n_streams > 1 else low,
            "pinned_host": self.device.is_gpu,
            "gbps_means": "bytes copied / that copy's busy time (a D2D copy reads and writes each byte)",
        }
        info.update(self.beside)
        if self.mode == "overlap" and not self.beside:
            info["copy_ran_beside_compute"] = None
        return info

    def size_label(self) -> str:
        side = self.params.get("gemm_side") or GEMM_SIDE[(self.size, self.dtype_name)]
        return f"{self.mode}: {self.dtype_name} GEMMs {side}^3 beside 3 x {self.copy_mb:g} MiB copies"
