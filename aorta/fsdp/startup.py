"""Start-up check of an FSDP run (pure: no torch): every rank was started with the same settings.

Under torchrun every rank parses its own command line. Ranks given different settings (another
``--aorta-override``, another ``--aorta-size``) would run different steps and wait on each other's collectives
until the timeout; comparing the settings when the process group comes up names the difference at once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

# The options that decide what each rank runs and how it is timed; the resolved FSDP configuration is
# compared as well (it already folds in --aorta-config, --aorta-override, --aorta-rounds and the smoke size). Options that only
# rank 0 acts on (results, baselines, reports) are left out.
AGREED_OPTIONS = {
    "aorta_device": "--aorta-device",
    "aorta_size": "--aorta-size",
    "aorta_dist_timeout": "--aorta-dist-timeout",
    "aorta_test_slowdown": "--aorta-test-slowdown",
    "aorta_streams": "--aorta-streams",
    "aorta_rounds": "--aorta-rounds",
    "aorta_warmup": "--aorta-warmup",
    "aorta_sync_mode": "--aorta-sync-mode",
    "aorta_issue_order": "--aorta-issue-order",
    "aorta_iterations": "--aorta-iterations",
    "aorta_copy_mb": "--aorta-copy-mb",
    "keyword": "-k",
    "markexpr": "-m",
    "benchmark_min_rounds": "--benchmark-min-rounds",
    "benchmark_warmup": "--benchmark-warmup",
    "benchmark_warmup_iterations": "--benchmark-warmup-iterations",
    "benchmark_disable_gc": "--benchmark-disable-gc",
    "benchmark_timer": "--benchmark-timer",
    "benchmark_min_time": "--benchmark-min-time",
    "benchmark_max_time": "--benchmark-max-time",
    "benchmark_calibration_precision": "--benchmark-calibration-precision",
    "benchmark_disable": "--benchmark-disable",
    "benchmark_skip": "--benchmark-skip",
    "benchmark_only": "--benchmark-only",
}
SHOWN_DIFFERENCES = 3


def _flatten(data: Mapping, prefix: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in data.items():
        if isinstance(value, Mapping):
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = json.dumps(value, sort_keys=True, default=str)
    return out


def rank_settings(config: Mapping, options: Mapping[str, object]) -> dict[str, str]:
    """One rank's settings as ``{name: canonical JSON}``: configuration keys as ``training.steps``,
    options as ``--aorta-size`` (an option this pytest does not have reads as missing)."""
    settings = _flatten(config, "")
    for name, flag in AGREED_OPTIONS.items():
        settings[flag] = json.dumps(options.get(name, "<missing>"), sort_keys=True, default=str)
    return settings


def settings_differences(per_rank: list[dict[str, str]]) -> list[str]:
    """Sentences naming each setting that is not the same on every rank: which values on which ranks."""
    names = sorted(set().union(*per_rank))
    out = []
    for name in names:
        by_value: dict[str, list[int]] = {}
        for rank, settings in enumerate(per_rank):
            by_value.setdefault(settings.get(name, "<missing>"), []).append(rank)
        if len(by_value) > 1:
            parts = [f"{value} on rank(s) {ranks}" for value, ranks in by_value.items()]
            out.append(f"{name} is {' but '.join(parts)}")
    return out


def settings_message(differences: list[str]) -> str:
    shown = "; ".join(differences[:SHOWN_DIFFERENCES])
    more = (
        f" (and {len(differences) - SHOWN_DIFFERENCES} more)" if len(differences) > SHOWN_DIFFERENCES else ""
    )
    return (
        f"aorta: ranks were started with different settings: {shown}{more}. Every rank must run the same "
        "configuration: give all ranks the same arguments and the same --aorta-config file"
    )
