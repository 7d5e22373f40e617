"""The run's environment: what is recorded about the machine and the software stack, and how two runs'
environments are compared.

``machine`` (machine_info, through the device and telemetry layers), ``versions`` (the pytest /
pytest-benchmark pairs aorta runs on), ``fingerprint`` (the facts that decide a run's figures, grouped to be
diffed; pure), ``stack_label`` (``aorta stack``).
"""
