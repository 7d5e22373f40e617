"""How many rounds the kernel-timestamp passes profile (no torch here: the gate's parent reads these too).

A profiled round costs far more host time than a timed one: the profiler records every launch, and its trace is
exported and parsed (aorta/timing/loop.py).
"""

# The labelled pass beside a graph replay (stage figures only): one round, so each stage figure is one value
# per run, judged as the run's figure (aorta.record.run_samples.per_round_figures). Two or three rounds would give
# samples too few for any test to judge (the gate needs five a side) at the cost of the slowest part of a run (an
# eager round under the profiler, its trace exported and read: 40 of 224 s of the default suite on an H100 with
# two rounds).
LABELLED_PASS_ROUNDS = 1
KERNEL_PASS_ROUNDS = 5  # profiled rounds of a plain run's kernel pass
# A gate's runs (its check run and its lean runs) profile 2 rounds: a run's kernel figures vary far less within
# the run than between runs (H200, p0 lean runs: hetero_kernels' effective-concurrency samples spread 0.1-0.4%
# within a run, 0.5-0.8% run to run), so the between-run noise the gate judges against is set by the runs, not
# by the profiled rounds, while the pass costs host time per profiled launch: 1.1-1.8 s of each hetero_kernels
# lean run and 2.7 s of each eager tiny_kernel_stress check at 5 rounds (issue 55). ``--aorta-kernel-pass-rounds``.
# The figures of a pass are recorded ``from_pass`` (aorta/record/metric.py): each run's figure is the median of
# the pass's rounds, never refused as too few samples (before they were marked, all 8 kernel-pass figures of p0
# ended UNSURE "too few samples: 2 round(s)" in every gate compare: an H200 A/A, 2026-12-07).
GATE_KERNEL_PASS_ROUNDS = 2
