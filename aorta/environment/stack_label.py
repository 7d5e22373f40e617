"""``aorta stack``: a file-name-safe label of this machine's stack, so saved runs can be told apart by name
(``pytest-benchmark compare`` labels each run by its file name)."""

from __future__ import annotations

import argparse
import re


def stack_label(gpu_name: str | None, gpu_count: int, software: dict) -> str:
    """``nvidia-h100-80gb-hbm3-x1-cuda13.0-torch2.11.0``; ``cpu-torch2.13.0`` without a GPU (pure)."""
    if gpu_name:
        runtime = f"hip{software['hip']}" if software.get("hip") else f"cuda{software.get('cuda')}"
        parts = [f"{gpu_name}-x{gpu_count}", runtime]
    else:
        parts = ["cpu"]
    parts.append(f"torch{str(software.get('torch', 'unknown')).split('+')[0]}")
    return re.sub(r"[^a-z0-9.]+", "-", "-".join(parts).lower()).strip("-")


def add_stack_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--aorta-device",
        default="auto",
        choices=("auto", "cuda", "rocm", "cpu"),
        help="which backend to describe (default auto)",
    )


def run_stack(args: argparse.Namespace) -> int:
    from aorta.device import Device

    device = Device.open(args.aorta_device)
    props = device.properties()
    gpu = props.name if device.is_gpu else None
    print(stack_label(gpu, props.device_count or 1, device.software()))
    return 0
