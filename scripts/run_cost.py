"""What a gate's run costs before and beside its benchmarks (issue 45), two ways:

- ``python3 -m scripts.run_cost``: the wall of what every run started from nothing pays, each in a fresh
  process: the interpreter, torch's import, torch's import and a CUDA context (where there is a GPU), and
  py-cpuinfo's probe (pytest-benchmark's machine info).
- ``-p scripts.run_cost`` with ``AORTA_STACKS=FILE``: where a pytest session's wall goes, by sampling its main
  thread.

A thread reads the main thread's Python stack every ``AORTA_STACKS_MS`` (default 5) ms of wall time (a frame
inside a C call, a GPU wait too, counts at its Python caller) and, at the end, writes to FILE the session's
marks (configure, collection done, first and last test, session end) and the functions holding the most
samples, inclusive and self. cProfile cannot do this: pytest-benchmark's fixture replaces the profile hook.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import Counter

_MARKS: list[tuple[str, float]] = []
_INCL: Counter = Counter()
_SELF: Counter = Counter()
_STOP = threading.Event()
_N = [0]


def _where(frame) -> str:
    code = frame.f_code
    return f"{os.path.relpath(code.co_filename)}:{code.co_firstlineno}({code.co_name})"


def _sample(main_id: int, interval_s: float) -> None:
    while not _STOP.wait(interval_s):
        frame = sys._current_frames().get(main_id)
        if frame is None:
            continue
        _N[0] += 1
        _SELF[_where(frame)] += 1
        seen = set()
        while frame is not None:
            where = _where(frame)
            if where not in seen:
                seen.add(where)
                _INCL[where] += 1
            frame = frame.f_back


def _mark(name: str) -> None:
    _MARKS.append((name, time.perf_counter()))


def pytest_configure(config) -> None:
    if not os.environ.get("AORTA_STACKS"):
        return
    _mark("configure")
    interval = float(os.environ.get("AORTA_STACKS_MS", "5")) / 1e3
    threading.Thread(target=_sample, args=(threading.main_thread().ident, interval), daemon=True).start()


def pytest_collection_finish(session) -> None:
    _mark("collection done")


def pytest_runtest_setup(item) -> None:
    if not any(n == "first test" for n, _ in _MARKS):
        _mark("first test")


def pytest_runtest_teardown(item) -> None:
    _MARKS[:] = [m for m in _MARKS if m[0] != "last test done"]
    _mark("last test done")


def pytest_sessionfinish(session) -> None:
    _mark("session finish")


def pytest_unconfigure(config) -> None:
    path = os.environ.get("AORTA_STACKS")
    if not path:
        return
    _mark("unconfigure")
    _STOP.set()
    t0 = _MARKS[0][1]
    lines = [f"process up {time.perf_counter() - t0:.2f} s after configure; samples {_N[0]}"]
    lines += [f"  {name:16s} {t - t0:7.2f} s" for name, t in _MARKS]
    total = max(_N[0], 1)
    lines.append("inclusive (share of samples):")
    lines += [f"  {100 * n / total:5.1f}%  {w}" for w, n in _INCL.most_common(70)]
    lines.append("self:")
    lines += [f"  {100 * n / total:5.1f}%  {w}" for w, n in _SELF.most_common(40)]
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")


COSTS = (
    ("interpreter", "pass"),
    ("import torch", "import torch"),
    ("import torch + CUDA context", "import torch; torch.zeros(1, device='cuda'); torch.cuda.synchronize()"),
    ("py-cpuinfo probe", "import cpuinfo; cpuinfo.get_cpu_info()"),
)


def costs() -> list[str]:
    """One line per cost: the wall of a fresh ``python -c`` doing it (a failure says so: no GPU, no module)."""
    import subprocess

    lines = []
    for what, code in COSTS:
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        wall = time.perf_counter() - t0
        tail = "" if done.returncode == 0 else f"  (failed: {done.stderr.strip().splitlines()[-1:]})"
        lines.append(f"{what:30s} {wall:6.2f} s{tail}")
    return lines


if __name__ == "__main__":
    print("\n".join(costs()))
