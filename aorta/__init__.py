"""aorta: GPU benchmarks for PyTorch written as pytest-benchmark tests.

Data flows one way: workload -> timed rounds -> intervals -> metrics -> benchmark JSON -> verdicts -> report.
"""

__version__ = "0.1.0"
