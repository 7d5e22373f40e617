"""One rank of ``aorta torchrun``: run pytest as ``python -m pytest`` does and leave its exit code in a file.

``python -m aorta.launch.rank_exit DIR PYTEST_ARGS...``: the code goes to ``DIR/rank<RANK>.code`` (written
then renamed, so a half-written file is never read), and is this process's exit status too.
"""

from __future__ import annotations

import os
import sys


def main(argv: list[str]) -> int:
    folder, args = argv[0], argv[1:]
    import pytest

    sys.argv = ["pytest", *args]  # as `python -m pytest ARGS` sees them
    code = int(pytest.console_main())
    rank = os.environ.get("RANK", "0")
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
