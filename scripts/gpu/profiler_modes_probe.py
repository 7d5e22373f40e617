"""Which profiler set-up records device kernels on this build, and at what host cost (GPU run).

Each mode profiles the same eager round (N tiny kernels on 2 streams inside aorta's labelled ranges) and
prints the events by kind and the host seconds of stop / read:
  events_user   : _enable_profiler(USER_SCOPE), result.events()
  save_user     : _enable_profiler(USER_SCOPE), result.save() -> JSON
  save_all      : _enable_profiler(every scope), result.save() -> JSON
  torch_profile : torch.profiler.profile(CPU, CUDA), export_chrome_trace -> JSON

python3 scripts/gpu/profiler_modes_probe.py [N]
"""

import collections
import json
import os
import sys
import tempfile
import time

import torch
import torch.autograd.profiler as ap
from torch._C._autograd import _disable_profiler, _enable_profiler, _prepare_profiler
from torch._C._profiler import RecordScope

from aorta import kernel_timeline as kt
from aorta.device import Device

N = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
dev = Device.open("auto")
streams = dev.streams(2)
x = torch.ones(1024, device="cuda")


def work():
    with dev.mark(kt.round_label(0)):
        for i, s in enumerate(streams):
            with dev.mark(kt.block_label(i, "tiny")), dev.use(s):
                for _ in range(N // 2):
                    x.add_(1.0)
    dev.synchronize()


def summary(trace, t_stop, t_read, label):
    cats = collections.Counter(e.get("cat") for e in kt.trace_events(trace) if e.get("ph") == "X")
    rounds = kt.parse_rounds(trace)
    figs = kt.round_figures(rounds[0]) if rounds and rounds[0].ops else {}
    print(
        f"{label:14} stop {t_stop:6.3f}s read {t_read:6.3f}s ops {len(rounds[0].ops) if rounds else 0:5d} "
        f"busy {figs.get('gpu_busy_share')} kinds {dict(cats)}",
        flush=True,
    )


def lean(scopes, via_save):
    template = ap.profile(use_device="cuda")
    try:
        config = template.config(create_trace_id=True)
    except TypeError:
        config = template.config()
    _prepare_profiler(config, template.kineto_activities)
    _enable_profiler(config, template.kineto_activities, scopes)
    work()
    t0 = time.perf_counter()
    result = _disable_profiler()
    t1 = time.perf_counter()
    if via_save:
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.json")
            result.save(path)
            with open(path) as fh:
                trace = json.load(fh)
    else:
        trace = kt.trace_from_profiler_events(result.events())
    return trace, t1 - t0, time.perf_counter() - t1


work()  # warm
for label, scopes, via_save in (
    ("events_user", {RecordScope.USER_SCOPE}, False),
    ("save_user", {RecordScope.USER_SCOPE}, True),
    ("save_all", set(), True),
):
    try:
        trace, t_stop, t_read = lean(scopes, via_save)
        summary(trace, t_stop, t_read, label)
    except Exception as err:
        print(label, "failed:", type(err).__name__, err, flush=True)

from torch.profiler import ProfilerActivity, profile  # noqa: E402

prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
prof.__enter__()
work()
t0 = time.perf_counter()
prof.__exit__(None, None, None)
t1 = time.perf_counter()
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "t.json")
    prof.export_chrome_trace(path)
    with open(path) as fh:
        trace = json.load(fh)
summary(trace, t1 - t0, time.perf_counter() - t1, "torch_profile")
