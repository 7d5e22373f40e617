"""The hardware-queue suite: workloads that put work on several streams, checked, timed and turned into figures.

``specs`` (every workload's spec, pure data: ``aorta list`` and option parsing read it without torch),
``workload`` (the base class and the one-stream check), ``write_log`` and ``launch_log`` (what a step writes
and launches, for the checks), ``stream_work`` (each stream's work against the declaration), ``run_mode``
(how a round reaches the GPU), ``runner`` (one workload from set-up to figures), ``listing`` (``aorta list``),
``workloads`` (the registry, one module per workload) and ``parts`` (pieces the workloads share).
"""
