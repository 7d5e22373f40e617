"""The device's own timeline: profiler capture, Chrome trace reading, per-round figures, interval algebra.

``kernel_capture`` (the profiler around some rounds, torch), ``trace_events`` (the one trace loader and the
vendor names), ``trace_check`` (malformed events refused, duplicates dropped), ``launch_links`` (device work to
its launch: correlation id, else flow events), ``rocprof`` (rocprofv3's CSV and rocpd outputs, hardware queues), ``device_op`` (the one kernel type: an op on the device's timeline), ``kernel_timeline``
(kernel timestamps -> per-round figures), ``kernel_names`` and ``kernel_summary`` (kernels by name, kept
with every run), ``profiler_steps`` (the profiler's ``ProfilerStep#N`` host ranges, one rule for every
reader), ``overlap`` (interval math) and ``group_overlap`` (overlap of labelled stream groups, round by
round). Everything but ``kernel_capture`` is pure and never imports torch.
"""
