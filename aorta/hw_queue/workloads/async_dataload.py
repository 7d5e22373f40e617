"""async_dataload: pinned host-to-device copies, preprocessing and a CNN on separate streams, double-buffered.

A training input pipeline: ``NB`` batches of uint8 images (B, 3, H, W) sit in page-locked host memory.
Per batch: copy to a device slot (copy stream) -> normalise and augment (flip) into a second slot
(preprocess stream) -> a small CNN forward (compute stream). Events order the stages of a batch; a slot
is reused only after the stage reading it has finished (the double buffer), so batch ``b + 1``'s copy
runs while batch ``b`` is in the CNN.

Stream roles: stream ``i`` copies if ``i % 3 == 0``, preprocesses if ``i % 3 == 1``, runs the CNN if
``i % 3 == 2``; batch ``b`` takes the ``b``-th stream of each role (round-robin). With fewer than three
streams the roles share streams (one stream: the serial pipeline). Each lane of three streams owns
two slots per stage. images/s and the share of copy time hidden behind the CNN.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

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

ROLES = ("copy", "preprocess", "compute")
MEAN = (0.485, 0.456, 0.406)  # ImageNet channel statistics, as torchvision's normalisation uses
STD = (0.229, 0.224, 0.225)

# batches NB, images per batch B, image side H (= W), CNN widths C. Full: a 9.6 MB uint8 batch takes
# ~0.2-0.4 ms over PCIe; the CNN (~16 GFLOP per batch) about as long: copy and compute can hide each other.
SIZES = {
    "full": dict(NB=8, B=64, H=224, C=(32, 64, 128), classes=1000),
    "smoke": dict(NB=3, B=2, H=16, C=(4, 8, 8), classes=10),
}


def role_streams(n: int) -> dict[str, list[int]]:
    """Stream indices per role: round-robin by ``i % 3``; a role with no stream shares stream ``role % n``."""
    return {role: [i for i in range(n) if i % 3 == r] or [r % n] for r, role in enumerate(ROLES)}


class AsyncDataload(Workload):
    spec = SPECS["async_dataload"]

    def setup(self) -> None:
        cfg = self.sized(SIZES)
        cfg["NB"] = max(cfg["NB"], self.n_streams)  # every stream gets a batch
        self.cfg = cfg
        NB, B, H, C = cfg["NB"], cfg["B"], cfg["H"], cfg["C"]
        dev = self.device.torch_device
        gen = self.generator()
        cpu_gen = torch.Generator().manual_seed(self.seed)
        # The "dataset": uint8 images in page-locked host memory (plain tensors on CPU).
        self.host = [
            self.device.host_tensor(torch.randint(0, 256, (B, 3, H, H), dtype=torch.uint8, generator=cpu_gen))
            for _ in range(NB)
        ]
        self.flip = torch.rand(NB, B, 1, 1, 1, generator=gen, device=dev) < 0.5  # augmentation decisions
        self.mean = torch.tensor(MEAN, device=dev).view(1, 3, 1, 1) * 255.0
        self.std = torch.tensor(STD, device=dev).view(1, 3, 1, 1) * 255.0
        widths = (3, *C)
        self.conv_w = [
            self.randn(co, ci, 3, 3, gen=gen, scale=(9 * ci) ** -0.5) for ci, co in zip(widths, widths[1:])
        ]
        self.fc = self.randn(C[-1], cfg["classes"], gen=gen, scale=C[-1] ** -0.5)
        self.roles = role_streams(self.n_streams)
        lanes = max(len(v) for v in self.roles.values())
        self.n_slots = 2 * lanes  # double buffer per lane
        self.raw = [torch.empty(B, 3, H, H, dtype=torch.uint8, device=dev) for _ in range(self.n_slots)]
        self.norm = [torch.empty(B, 3, H, H, dtype=self.dtype, device=dev) for _ in range(self.n_slots)]
        self.logits = torch.zeros(NB, B, cfg["classes"], dtype=self.dtype, device=dev)  # (NB, B, classes)
        # Events from the previous use of each slot: the reader of raw[slot] / norm[slot] finished.
        self.raw_free: list[object | None] = [None] * self.n_slots
        self.norm_free: list[object | None] = [None] * self.n_slots
        self.log = StageLog()

    def _cnn(self, x: torch.Tensor) -> torch.Tensor:
        for w in self.conv_w:  # 3x3 convolutions, stride 2: (B, C, H, W) -> (B, C', H/2, W/2)
            x = F.relu(F.conv2d(x, w, stride=2, padding=1))
        return x.mean(dim=(2, 3)) @ self.fc  # global average pool -> (B, classes)

    def step(self, rec) -> None:
        self.log.begin_step()
        dev = self.device
        for b in range(self.cfg["NB"]):
            slot = b % self.n_slots
            c_i = self.roles["copy"][b % len(self.roles["copy"])]
            p_i = self.roles["preprocess"][b % len(self.roles["preprocess"])]
            m_i = self.roles["compute"][b % len(self.roles["compute"])]
            if self.raw_free[slot] is not None:
                dev.wait_event(rec.stream(c_i), self.raw_free[slot])  # the last reader of raw[slot] is done
            with self.log.on(rec, c_i, "copy"):
                self.raw[slot].copy_(self.host[b], non_blocking=True)  # pinned host -> device
            copied = dev.record_event(rec.stream(c_i))

            dev.wait_event(rec.stream(p_i), copied)  # preprocess reads the copied batch
            if self.norm_free[slot] is not None:
                dev.wait_event(rec.stream(p_i), self.norm_free[slot])  # the CNN has finished with norm[slot]
            with self.log.on(rec, p_i, "preprocess"):
                x = (self.raw[slot].float() - self.mean) / self.std  # (B, 3, H, W), fp32 like torchvision
                self.norm[slot].copy_(torch.where(self.flip[b], x.flip(-1), x))  # random horizontal flip
            prepped = dev.record_event(rec.stream(p_i))
            self.raw_free[slot] = prepped

            dev.wait_event(rec.stream(m_i), prepped)  # the CNN reads the preprocessed batch
            with self.log.on(rec, m_i, "compute"):
                self.logits[b].copy_(self._cnn(self.norm[slot]))
            self.norm_free[slot] = dev.record_event(rec.stream(m_i))

    def expected_work(self) -> WorkSpec:
        # Copy, preprocess and compute roles round-robin over the streams: every stream has a role.
        return every_stream(self.n_streams, StreamWork(ops=1))

    def result(self):
        return self.logits

    def images_per_iteration(self) -> int:
        return self.cfg["NB"] * self.cfg["B"]

    def metrics(self, per_iteration_ms: Sequence[float]) -> list[Metric]:
        rate = [self.images_per_iteration() / (ms * 1e-3) for ms in per_iteration_ms]
        return [Metric("images_per_s", median(rate), "images/s", True, tuple(rate))]

    def extra_metrics(self, run) -> tuple[list[Metric], dict[str, str]]:
        labelled = [r.label_intervals_ms for r in run.rounds]
        k = run.iterations_per_round
        copy_busy = busy_ms_per_round(labelled, ["copy"])
        bytes_per_round = [float(self.host[0].numel() * self.cfg["NB"] * k)] * len(copy_busy)
        h2d = rate_samples(bytes_per_round, copy_busy, 1e-9)
        out = [
            Metric(f"{role}_busy_ms", median(b), "ms", False, tuple(b))
            for role in ROLES
            for b in [[x / k for x in busy_ms_per_round(labelled, [role])]]
        ]
        if h2d:
            out.append(Metric("h2d_gbps", median(h2d), "GB/s", True, tuple(h2d)))
        if not self.device.is_gpu:
            return out, {"copy_compute_overlap_ratio": CPU_SERIAL_REASON}
        ov = label_overlap(labelled, ["compute"], ["copy"])
        if ov["overlap_ratio"] is None:
            return out, {"copy_compute_overlap_ratio": "no copy intervals recorded"}
        out.append(
            Metric(
                "copy_compute_overlap_ratio",
                ov["overlap_ratio"],
                "ratio",
                True,
                tuple(ov["overlap_ratio_samples"]),
            )
        )
        return out, {}

    def info(self) -> dict:
        c = self.cfg
        return {
            "batches": c["NB"],
            "images_per_batch": c["B"],
            "image_side": c["H"],
            "cnn_widths": list(c["C"]),
            "classes": c["classes"],
            "slots": self.n_slots,
            "pinned_host": self.device.is_gpu,
            "role_streams": self.roles,
            "bytes_per_batch": self.host[0].numel(),
            "copy_compute_overlap": "share of copy time during which the CNN ran (|copy ∩ compute| / |copy|)",
        }

    def size_label(self) -> str:
        c = getattr(self, "cfg", SIZES[self.size])
        return f"{c['NB']} batches x {c['B']} images 3x{c['H']}x{c['H']} {self.dtype_name}"
