"""What the save line suggests for a baseline of one run (pure: no torch).

Outside torchrun the gate starts fresh-process runs itself (``--aorta-runs N``); under torchrun it refuses
that option, so the line must not suggest it there (issue 38, case 26): each torchrun launch with the same
``--aorta-save-baseline NAME`` adds a run.
"""

from __future__ import annotations


def one_run_hint(multi_rank: bool) -> str:
    if multi_rank:
        return (
            "1 run: launch torchrun again with the same --aorta-save-baseline NAME (each launch adds a run) "
            "to give the gate the noise between runs"
        )
    return "1 run: save it again, or with --aorta-runs N, to give the gate the noise between runs"
