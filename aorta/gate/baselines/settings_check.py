"""The gate's refusal to compare runs whose scheduling settings differ without being named (pure).

Comparing two stacks on purpose (another torch, CUDA/ROCm, NCCL/RCCL, driver) is what the gate is for:
version differences are shown in the header and allowed. A difference in the scheduling environment
variables (``NCCL_*``, ``RCCL_*``, ``TORCH_NCCL_*``, ``CUDA_DEVICE_MAX_CONNECTIONS``, ``GPU_MAX_HW_QUEUES``,
``HSA_*`` ...) is a second change hidden in the comparison, so it is refused with its own exit code unless
the user names it as intended (``--aorta-allow-env-diff NAME[,NAME]``, ``*`` for all).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from aorta.environment.fingerprint import describe, unintended_settings
from aorta.exit_codes import EXIT_SETTINGS_DIFFER
from aorta.record.redact import HIDDEN, SECRET_NAME


def settings_refusal(
    ref_machine: Mapping,
    cand_machine: Mapping,
    allowed: Iterable[str],
    *,
    baseline: str,
    candidate: str,
    allow_option: str,
) -> str | None:
    """The refusal sentence naming each setting that differs, or None when the comparison may go ahead."""
    diffs = unintended_settings(ref_machine, cand_machine, allowed)
    if not diffs:
        return None
    names = ",".join(name for name, _, _ in diffs)
    # a setting whose name says secret (NCCL_PASSWORD_TEST) is named, its values never (issue 65)
    diffs = [(n, HIDDEN, HIDDEN) if SECRET_NAME.search(n) else (n, a, b) for n, a, b in diffs]
    return (
        f"refused (exit {EXIT_SETTINGS_DIFFER}): scheduling settings differ between {baseline} and "
        f"{candidate}: {describe(diffs)}; the comparison would judge these settings along with the stack. "
        f"Run both with the same settings, or name the ones changed on purpose: {allow_option} {names} "
        f"({allow_option} '*' allows every difference)"
    )
