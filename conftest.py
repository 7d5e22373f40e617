# Registers aorta's plugin for runs from a checkout where aorta is not pip-installed
# (when it is, the pytest11 entry point has already registered it).
from aorta.registration import pytest_plugins  # noqa: F401
