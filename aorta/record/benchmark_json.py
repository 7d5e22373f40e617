"""pytest-benchmark's ``--benchmark-json`` written atomically (pure: no torch).

pytest-benchmark opens the file and writes into it; a full disk leaves a partial file (a few KB of JSON cut
off) where the results should be, and a file that looks like a result. Its session's ``save_json`` is
replaced here by one that writes beside the file and renames it into place: either the whole JSON is there,
or the file is as it was before the run and the reason is kept for the run's summary and exit code.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from aorta.record.atomic import write_bytes_atomic


def install_atomic_writer(bs: object, on_error: Callable[[str], None]) -> bool:
    """Make ``bs`` (pytest-benchmark's session) write its ``--benchmark-json`` atomically; ``on_error``
    gets the sentence when it cannot. False where the file was opened already (pytest-benchmark < 5.3 opens
    it while parsing the options) or the session has no such writer: left as it is."""
    path = getattr(bs, "json", None)
    if not isinstance(path, (str, os.PathLike)) or not callable(getattr(bs, "save_json", None)):
        return False
    from pytest_benchmark.utils import safe_dumps

    def save_json(output_json: dict) -> None:
        try:
            write_bytes_atomic(path, safe_dumps(output_json, ensure_ascii=True, indent=4).encode())
        except OSError as exc:
            on_error(
                f"--benchmark-json {os.fspath(path)}: NOT written: {exc.strerror or exc}; no partial file "
                "was left (an earlier file there is unchanged)"
            )
            return
        bs.logger.info(f"Wrote benchmark data in: {os.fspath(path)}", purple=True)  # type: ignore[attr-defined]

    bs.save_json = save_json  # type: ignore[attr-defined]
    return True


def session_document(config) -> dict | None:
    """This pytest run as pytest-benchmark writes it, through its own hooks (machine and commit info, raw
    data included); None where no benchmark session is active. The gate's candidate and the history's row
    are built here alike."""
    bs = getattr(config, "_benchmarksession", None)
    if bs is None or getattr(bs, "disabled", False):
        return None
    machine_info = bs.get_machine_info()
    commit_info = config.hook.pytest_benchmark_generate_commit_info(config=config)
    config.hook.pytest_benchmark_update_commit_info(config=config, commit_info=commit_info)
    doc = config.hook.pytest_benchmark_generate_json(
        config=config,
        benchmarks=bs.benchmarks,
        include_data=True,
        machine_info=machine_info,
        commit_info=commit_info,
    )
    config.hook.pytest_benchmark_update_json(config=config, benchmarks=bs.benchmarks, output_json=doc)
    return doc
