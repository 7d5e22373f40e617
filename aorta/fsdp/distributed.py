"""The session's process group, read from the torchrun environment, and the control plane between ranks.

Backends: ``nccl`` on NVIDIA, the same name on ROCm (where it is RCCL), ``gloo`` on CPU. Each rank binds to
its local device; a ``LOCAL_RANK`` past the visible devices is mapped modulo their count, with a warning.
Without torchrun the session still builds a real one-rank group (in-memory ``HashStore``), so the code
paths are the ones a multi-rank run takes.

Control plane: agreement between ranks (same tests collected, same outcome per test, results gathered to
rank 0) goes through the process group's key-value store, not through collectives: every message has its
own key (``aorta/<what>/<rank>``), so a rank that fails early can never be paired with a peer's
unrelated collective, a waiting rank gives up as soon as a peer reports a failure, and a rank that never
arrives is named when the wait times out.

Timeouts: every group gets ``--aorta-dist-timeout`` seconds. On NCCL/RCCL the watchdog aborts a
collective that stalls past it and ends the process (``TORCH_NCCL_ASYNC_ERROR_HANDLING``; torch's default
tears down on timeout), and torchrun then stops the other ranks, naming the one that failed; on gloo the
collective raises after the timeout. A rank that dies is reported by torchrun, which stops the others; a
rank that stalls outside collectives is named by the next control-plane wait (``RankTimeout``).
"""

from __future__ import annotations

import os
import pickle
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta

import torch.distributed as dist

from aorta.device import Device, detect_backend


@dataclass(frozen=True)
class LaunchInfo:
    rank: int
    world_size: int
    local_rank: int
    torchrun: bool


def launch_info(environ: Mapping[str, str] | None = None) -> LaunchInfo:
    """RANK / WORLD_SIZE / LOCAL_RANK as torchrun sets them; rank 0 of 1 without them."""
    env = os.environ if environ is None else environ
    if "WORLD_SIZE" not in env or "RANK" not in env:
        return LaunchInfo(0, 1, 0, False)
    try:
        rank, world = int(env["RANK"]), int(env["WORLD_SIZE"])
        local = int(env.get("LOCAL_RANK", rank))
    except ValueError:
        raise ValueError(
            f"torchrun environment not understood: RANK={env.get('RANK')!r} "
            f"WORLD_SIZE={env.get('WORLD_SIZE')!r} LOCAL_RANK={env.get('LOCAL_RANK')!r}"
        ) from None
    if not 0 <= rank < world:
        raise ValueError(f"RANK={rank} is outside WORLD_SIZE={world}")
    return LaunchInfo(rank, world, local, True)


def device_index_for(local_rank: int, visible: int) -> tuple[int, str | None]:
    """The device this local rank uses and, when it had to wrap around, a warning saying so."""
    if visible < 1:
        raise ValueError("no visible devices")
    if local_rank < visible:
        return local_rank, None
    index = local_rank % visible
    return index, (
        f"LOCAL_RANK={local_rank} but only {visible} device(s) are visible: "
        f"using device {index} (ranks share devices; timings will interfere)"
    )


@dataclass
class DistEnv:
    rank: int
    world_size: int
    local_rank: int
    device: Device
    backend: str  # process-group backend: nccl (NVIDIA, or RCCL on ROCm) or gloo
    timeout_s: float
    torchrun: bool
    owns_group: bool
    store: dist.Store | None = None  # the group's key-value store: the control plane
    warnings: list[str] = field(default_factory=list)

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    @property
    def comm_library(self) -> str:
        if self.backend == "gloo":
            return "gloo"
        return "rccl" if self.device.backend == "rocm" else "nccl"

    def exchange(self, what: str, obj, *, abort_if: str | None = None, poll_s: float = 0.005) -> list:
        """Every rank's ``obj`` for step ``what`` (a unique name), in rank order, on every rank.

        Waits at most ``timeout_s``; a rank that has not arrived by then is named in ``RankTimeout``. With
        ``abort_if``, a peer that posted a failed outcome under that name ends the wait at once
        (``PeerFailed``): that peer will not arrive here.
        """
        if self.world_size == 1 or self.store is None:
            return [obj]
        key = lambda r, name=what: f"aorta/{name}/{r}"  # noqa: E731
        # Store.set takes bytes as well as str (the value is stored as is); torch's stub names only str.
        self.store.set(key(self.rank), pickle.dumps(obj))  # type: ignore[arg-type]
        deadline = time.monotonic() + self.timeout_s
        pending = set(range(self.world_size))
        while pending:
            pending = {r for r in pending if not self.store.check([key(r)])}
            if not pending:
                break
            if abort_if is not None:
                for r in range(self.world_size):
                    if r != self.rank and self.store.check([key(r, abort_if)]):
                        outcome = pickle.loads(self.store.get(key(r, abort_if)))
                        if outcome and outcome[0] == "failed":
                            raise PeerFailed(
                                f"rank {r} failed this test before {what!r} was reached ({outcome[1]})"
                            )
            if time.monotonic() > deadline:
                raise RankTimeout(
                    f"rank(s) {sorted(pending)} did not reach {what!r} within {self.timeout_s:g} s "
                    f"(--aorta-dist-timeout): dead or stalled"
                )
            time.sleep(poll_s)
        return [pickle.loads(self.store.get(key(r))) for r in range(self.world_size)]

    def shutdown(self) -> None:
        if self.owns_group and dist.is_initialized():
            dist.destroy_process_group()


class RankTimeout(RuntimeError):
    """A rank did not arrive within the timeout (died or stalled)."""


class PeerFailed(RuntimeError):
    """A peer failed the current test, so it will not reach the step this rank waits at."""


def init_dist(requested_device: str, timeout_s: float, environ: Mapping[str, str] | None = None) -> DistEnv:
    """Bind this rank to its device and start (or join) the process group."""
    info = launch_info(environ)
    backend = detect_backend(requested_device)
    notes: list[str] = []
    index = 0
    if backend != "cpu":
        index, note = device_index_for(info.local_rank, Device.visible_gpu_count())
        if note:
            warnings.warn(note, stacklevel=2)
            notes.append(note)
    device = Device(backend, index)
    pg_backend = "gloo" if backend == "cpu" else "nccl"
    timeout = timedelta(seconds=timeout_s)
    owns = False
    if not dist.is_initialized():
        if info.torchrun:
            dist.init_process_group(pg_backend, timeout=timeout, rank=info.rank, world_size=info.world_size)
        else:  # one rank, no launcher: a real group over an in-memory store
            dist.init_process_group(pg_backend, store=dist.HashStore(), rank=0, world_size=1, timeout=timeout)
        owns = True
    store = _default_store()
    return DistEnv(
        rank=dist.get_rank(),
        world_size=dist.get_world_size(),
        local_rank=info.local_rank,
        device=device,
        backend=pg_backend,
        timeout_s=timeout_s,
        torchrun=info.torchrun,
        owns_group=owns,
        store=store,
        warnings=notes,
    )


def _default_store():
    """The default group's store (torch keeps it private; the control plane needs only set/get/check)."""
    from torch.distributed import distributed_c10d

    try:
        return distributed_c10d._get_default_store()
    except (AttributeError, RuntimeError, ValueError):
        return None
