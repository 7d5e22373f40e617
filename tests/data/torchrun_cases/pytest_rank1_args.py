"""Run by tests/test_fsdp_torchrun_cpu.py under torchrun: pytest with the arguments given, plus those in
``AORTA_RANK1_ARGS`` on rank 1 only (ranks started with different settings)."""

import os
import shlex
import sys

import pytest

args = sys.argv[1:]
if os.environ.get("RANK") == "1":
    args += shlex.split(os.environ.get("AORTA_RANK1_ARGS", ""))
sys.exit(pytest.main(args))
