"""Print a short table from one or more aorta benchmark JSON files: name, streams, distinct, metric, ms, concurrency."""

import json
import sys

from aorta.stats import median
from aorta.table import format_table

rows = []
for path in sys.argv[1:]:
    with open(path) as f:
        data = json.load(f)
    for b in data["benchmarks"]:
        e = b["extra_info"]
        if "metrics" not in e:
            continue
        head = e["metrics"].get(e.get("headline_metric", ""), {})
        extras = ", ".join(f"{k}={v['value']:.4g}" for k, v in e["metrics"].items()
                           if k != e.get("headline_metric") and isinstance(v, dict) and "value" in v)
        ms = e.get("device_ms_per_iteration")
        rows.append([b["name"], e.get("streams_requested"), e.get("distinct_streams"),
                     f"{head.get('value', float('nan')):.4g} {head.get('unit', '')}",
                     median(ms) if ms else None, e.get("effective_concurrency"), e.get("timing_method"), extras[:90]])
for line in format_table(["benchmark", "streams", "distinct", "metric", "median ms", "ev.conc", "timing", "other"], rows):
    print(line)
