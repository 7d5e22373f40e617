"""Run under torchrun by tests/test_fsdp_torchrun_cpu.py with a short --aorta-dist-timeout: rank 1 stalls."""

import os
import time

RANK = int(os.environ.get("RANK", "0"))


def test_rank_1_stalls(dist_env):
    if RANK == 1:
        time.sleep(120)  # far past the timeout: rank 0 must give up and name rank 1
