"""GPU telemetry: what the GPU's clocks, power, temperature and throttle state were during a benchmark.

Modules: ``sample`` (one reading), ``throttle`` (throttle-reason decoding, the throttled-sample rule),
``parse`` (pure parsers of ``nvidia-smi`` / ``rocm-smi`` output), ``summary`` (per-benchmark figures and
round matching), ``sources`` (the vendor calls: NVML, amdsmi, the command-line tools), ``sampler``
(the background thread), ``inventory`` (static facts for machine_info) and ``plugin`` (pytest wiring).
Everything but ``sources``, ``inventory`` and ``plugin`` is pure and never imports torch or a vendor library.
"""
