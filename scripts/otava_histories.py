#!/usr/bin/env python3
"""Apache Otava's change points on the simulated histories of scripts/history_simulation.py (issue 40).

Run with a Python that has apache-otava installed (it pins its own numpy and scipy, so a virtual environment
of its own: python3 -m venv /tmp/otava && /tmp/otava/bin/pip install apache-otava):

    /tmp/otava/bin/python scripts/otava_histories.py HISTORIES.json FOUND.json

HISTORIES.json: a list of series (lists of run figures); FOUND.json: per series, the indices Otava found, with
its defaults as the issue cites them (E-divisive means, window 50, p 0.001).
"""

from __future__ import annotations

import json
import sys

from otava.analysis import compute_change_points

WINDOW, MAX_PVALUE = 50, 0.001


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1], encoding="utf-8") as fh:
        series = json.load(fh)
    found = [
        sorted(int(cp.index) for cp in compute_change_points(s, window_len=WINDOW, max_pvalue=MAX_PVALUE)[0])
        for s in series
    ]
    with open(sys.argv[2], "w", encoding="utf-8") as fh:
        json.dump(found, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
