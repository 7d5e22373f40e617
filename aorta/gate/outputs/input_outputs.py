"""The gate's outputs checked against its inputs before the run (pure: no torch).

``--benchmark-json``, ``--aorta-verdict-json`` or ``--aorta-markdown`` naming the baseline compared with, or
the baseline file the run will be saved to, would replace its stored runs with a verdict or a single run
(issue 38, case 1): refused before any benchmark runs, as a usage error (exit 4). Nor may two of them (or
``$GITHUB_STEP_SUMMARY``) name one file, the default verdict place included (issue 56).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from aorta.record.output_paths import check_not_an_input, check_not_another_output


def check_outputs_are_not_inputs(
    outputs: Mapping[str, str | os.PathLike | None],
    *,
    compared: Path | None = None,
    saved_to: Path | None = None,
) -> None:
    """``OutputPathError`` naming the option, the path and the input it would replace."""
    inputs: dict[str, str | os.PathLike] = {}
    if compared is not None:
        inputs["the baseline compared with (--aorta-compare)"] = compared
    if saved_to is not None:
        inputs["the baseline this run is saved to (--aorta-save-baseline)"] = saved_to
    given = {option: path for option, path in outputs.items() if path}
    for option, path in given.items():
        check_not_an_input(option, path, inputs)
        check_not_another_output(option, path, given)
