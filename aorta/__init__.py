"""aorta: GPU benchmarks for PyTorch written as pytest-benchmark tests.

The map, one package per arrow of the data flow (workload -> timed rounds -> kernel timeline -> figures ->
record -> verdicts -> report), in that order:

- ``stats/``        pure statistics: percentiles and medians; between-run noise and the minimum detectable
                    effect (``stats/noise.py``), which the gate judges by and the history finds change points by
- ``hw_queue/``     hardware-queue workloads: specs, the workload base and its checks, run modes, the runner
- ``fsdp/``         FSDP2 overlap scenarios: config, model, training on torchrun, per-rank figures
- ``device/``       the one place accelerator calls go: streams, events, native streams (CUDA, ROCm, CPU); it
                    imports nothing of aorta (its callers build the profiler capture around it)
- ``timing/``       the one timing loop; the replay clock for pytest-benchmark, the calibrated slowdown
- ``timeline/``     profiler capture, Chrome trace reading, per-round kernel figures, interval algebra
- ``telemetry/``    clocks, power, temperature and throttling during a benchmark
- ``environment/``  machine info, software versions, the fingerprint two runs are diffed by, stack label
- ``record/``       what goes to disk and how it is read back: bench record, metric, atomic writes, paths, a run
                    document's samples (``record/run_samples.py``), its runs read once (``record/run_set.py``)
                    and machine (``record/machines.py``)
- ``processes/``    the processes aorta starts: a child under a keeper and its tree's end, death with the
                    parent, the fork server and the rank server (warm ranks), the locks between processes
- ``gate/``         baselines, statistical verdicts, why a figure moved, the fresh runs that feed them
- ``report/``       summary JSON, figures, one HTML page, Chrome traces over saved runs
- ``sweep/``        ``aorta sweep``: one benchmark command per cell of a grid of settings
- ``history/``     the run history: runs kept in SQLite or PostgreSQL, trends, change points
- ``launch/``       ``aorta torchrun``: torchrun, exiting with rank 0's pytest code

Top level: ``plugin`` (the pytest entry point), ``hookspec`` (the seams between the plugins), ``options``
(parsed once), ``exit_codes`` (every exit code: constants only), ``cli``. Imports go only from a layer to those
before it: stats, record, exit_codes <- timeline <- device <- timing <- hw_queue, fsdp <- telemetry <-
environment <- plugin, options, hookspec <- processes <- gate, report, sweep, launch, history <- cli
(tests/test_architecture.py); a plugin reaches a later layer's plugin through a hook or a fixture named in
``hookspec``, not an import, and no module reaches itself through its imports.
"""

__version__ = "0.1.0"
