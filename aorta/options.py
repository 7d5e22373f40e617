"""Command-line option converters (``parse_*``) and the resolved options, parsed once.

Converters raise ``argparse.ArgumentTypeError`` with the option, the value and what is allowed, so a
bad value is a usage error before any benchmark runs.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from aorta.hw_queue.specs import ISSUE_ORDERS, SIZE_NAMES  # pure: option parsing never imports torch
from aorta.timing.loop import SYNC_MODES

MAX_STREAMS = 1024
DEVICE_CHOICES = ("auto", "cuda", "rocm", "cpu")


def _int_list(option: str, text: str, lo: int, hi: int) -> tuple[int, ...]:
    parts = str(text).split(",")
    values = []
    for part in parts:
        part = part.strip()
        try:
            value = int(part)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{option}={text!r}: {part!r} is not an integer; give an int or a comma list such as 1,4,16,64"
            ) from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(
                f"{option}={text!r}: {value} is out of range; allowed {lo} to {hi}"
            )
        values.append(value)
    return tuple(dict.fromkeys(values))  # keep order, drop repeats


def parse_streams(text: str) -> tuple[int, ...]:
    return _int_list("--aorta-streams", text, 1, MAX_STREAMS)


def _one_int(option: str, text: str, lo: int, hi: int) -> int:
    values = _int_list(option, text, lo, hi)
    if len(values) != 1 or "," in str(text):
        raise argparse.ArgumentTypeError(f"{option}={text!r}: give one integer from {lo} to {hi}")
    return values[0]


def parse_rounds(text: str) -> int:
    return _one_int("--aorta-rounds", text, 1, 100_000)


def parse_kernel_pass_rounds(text: str) -> int:
    return _one_int("--aorta-kernel-pass-rounds", text, 1, 1000)


def parse_warmup(text: str) -> int:
    return _one_int("--aorta-warmup", text, 0, 100_000)


def parse_iterations(text: str) -> int:
    return _one_int("--aorta-iterations", text, 1, 1_000_000)


MAX_COPY_MB = 65536.0  # 64 GiB: more than any GPU's copy buffer worth timing


def parse_copy_mb(text: str) -> float:
    """``--aorta-copy-mb``: MiB per copy (host-to-device, device-to-host, device-to-device), > 0 and <= 65536."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--aorta-copy-mb={text!r}: not a number; give MiB per copy, e.g. 64"
        ) from None
    if not 0.0 < value <= MAX_COPY_MB:  # also rejects nan
        raise argparse.ArgumentTypeError(
            f"--aorta-copy-mb={text!r}: out of range; allowed more than 0 and at most {MAX_COPY_MB:g} MiB"
        )
    return value


MAX_EXTRA_DEPS = 8  # relay hops per dependency in stream_dependency (one relay stream each)


def parse_extra_deps(text: str) -> int:
    """``--aorta-extra-deps``: deliberate extra dependency hops per dependent kernel in stream_dependency, 0 to 8."""
    return _one_int("--aorta-extra-deps", text, 0, MAX_EXTRA_DEPS)


def _choice(option: str, allowed: tuple[str, ...]):
    def parse(text: str) -> str:
        if text not in allowed:
            raise argparse.ArgumentTypeError(f"{option}={text!r}: allowed values are {', '.join(allowed)}")
        return text

    parse.__name__ = f"parse_{option.strip('-').replace('-', '_')}"
    return parse


parse_sync_mode = _choice("--aorta-sync-mode", SYNC_MODES)
parse_mode = _choice("--aorta-mode", ("eager", "gpu"))
parse_device = _choice("--aorta-device", DEVICE_CHOICES)
parse_size = _choice("--aorta-size", ("auto", *SIZE_NAMES))


def parse_issue_order(text: str) -> tuple[str, ...]:
    values = tuple(dict.fromkeys(v.strip() for v in str(text).split(",")))
    for v in values:
        if v not in ISSUE_ORDERS:
            raise argparse.ArgumentTypeError(
                f"--aorta-issue-order={text!r}: {v!r} is not allowed; allowed: {', '.join(ISSUE_ORDERS)} (or both, comma-separated)"
            )
    return values


@dataclass(frozen=True, kw_only=True)
class AortaOptions:
    """The options every aorta plugin shares, resolved once at configure time (``aorta.plugin.resolved_options``;
    other plugins ask through the ``pytest_aorta_options`` hook)."""

    streams: tuple[int, ...]
    rounds: int  # resolved: the user's, else 10 on a GPU and 5 on CPU (plugin.GPU_ROUNDS)
    warmup: int  # resolved: the user's, else 3 on a GPU and 1 on CPU; 1 in a gate's lean run
    sync_mode: str
    device: str  # as requested: auto / cuda / rocm / cpu
    backend: str  # what it resolved to: cuda / rocm / cpu
    size: str  # as requested: auto / smoke / full
    issue_order: tuple[str, ...]
    iterations: int | None  # fixed K per round; None = probe
    copy_mb: float | None = None  # MiB per copy for copy_compute_overlap; None = the size's default
    extra_deps: int = 0  # stream_dependency: deliberate extra dependency hops per dependent kernel (0: none)
    mode: str = "gpu"  # gpu: the round queued on the GPU before it starts (eager on CPU); or eager
    rounds_given: bool = False  # --aorta-rounds was on the command line (the FSDP suite uses it only then)
    warmup_given: bool = False

    def __post_init__(self) -> None:
        if self.backend not in DEVICE_CHOICES[1:]:
            raise ValueError(
                f"AortaOptions.backend={self.backend!r}: allowed {', '.join(DEVICE_CHOICES[1:])}"
            )

    @property
    def resolved_size(self) -> str:
        """smoke or full: ``--aorta-size``, where auto means smoke on CPU and full on a GPU."""
        if self.size != "auto":
            return self.size
        return "smoke" if self.backend == "cpu" else "full"
