"""The regression gate: is a run slower than a baseline, by how much, and why.

Its rooms, in the order a run's data flows through them (each imports only itself and the rooms before it,
tests/test_architecture.py):

- ``runs/``        plan and run: the fresh runs, their blocks and seeds, their wall, empty runs
- ``stats/``       a document's samples run by run; noise and spread between machines; the sequential looks
- ``verdicts/``    one figure's verdict: baseline runs against candidate runs, paired by block; the one-machine rule
- ``causes/``      why a verdict moved: each run's evidence, the kernels that changed, named causes in words
- ``comparison/``  a run against a baseline: settings, every figure's verdict and causes, the refusals
- ``baselines/``   saving and finding baselines, and the checks made before a run that saves or compares
- ``outputs/``     the terminal table, the verdict JSON and markdown, outputs checked against the inputs
- ``session/``     one gate from its options to its exit code, as pytest and ``aorta ab`` drive it

On top, the entry points: ``plugin.py`` (pytest's hooks, each handing over to a step of ``session/``),
``cli.py`` (``aorta compare``), ``noise_cli.py`` (``aorta noise``) and ``ab_cli.py`` (``aorta ab``).
Below the gate, shared with the run history: ``aorta/stats/noise.py`` (between-run noise, the MDE),
``aorta/record/run_samples.py`` and ``machines.py`` (a run's samples and machine), ``aorta/exit_codes.py``;
shared with the launchers and the sweep: ``aorta/processes/`` (the fork server, the keeper, a child's start and
stop, the lock on a baseline).
"""
