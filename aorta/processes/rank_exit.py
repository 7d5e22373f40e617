"""One rank of ``aorta torchrun``: run pytest as ``python -m pytest`` does and leave its exit code in a file.

``python -m aorta.processes.rank_exit DIR PYTEST_ARGS...``: the code goes to ``DIR/rank<RANK>.code`` (written
then renamed, so a half-written file is never read), and is this process's exit status too.
"""

from __future__ import annotations

import os
import sys
import time


class FirstError:
    """Keeps this rank's first failure, when and what (its last line: ``torch.OutOfMemoryError: ...``), in
    ``DIR/rank<RANK>.error``: ranks other than 0 print nothing (issue 38, case 23), so the launcher reads it
    there and names the rank that failed first and why."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.done = False

    def _keep(self, report) -> None:
        if self.done or not report.failed:
            return
        self.done = True
        lines = [ln for ln in str(getattr(report, "longreprtext", "") or "").splitlines() if ln.strip()]
        why = next((ln for ln in reversed(lines) if ln.startswith("E ")), lines[-1] if lines else "failed")
        try:
            with open(self.path, "w", encoding="utf-8") as f:
                f.write(
                    f"{time.time():.3f} {getattr(report, 'nodeid', '')}: {why.lstrip('E').strip()[:500]}\n"
                )
        except OSError:
            pass

    def pytest_runtest_logreport(self, report) -> None:
        self._keep(report)

    def pytest_collectreport(self, report) -> None:
        self._keep(report)


def main(argv: list[str]) -> int:
    folder, args = argv[0], argv[1:]
    import pytest

    rank = os.environ.get("RANK", "0")
    sys.argv = ["pytest", *args]  # as `python -m pytest ARGS` sees them
    code = int(pytest.main(args, plugins=[FirstError(os.path.join(folder, f"rank{rank}.error"))]))
    tmp = os.path.join(folder, f".rank{rank}.code.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(f"{code}\n")
        os.replace(tmp, os.path.join(folder, f"rank{rank}.code"))
    except OSError:
        pass  # the launcher then reports torchrun's own code
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
