"""The seams between aorta's plugins: the hooks one plugin implements and another calls.

``aorta.plugin`` registers these specifications (``pytest_addhooks``) before its sub-plugins are registered;
a sub-plugin asks through ``config.hook.<name>(...)`` instead of importing the registrar, so the FSDP suite
(a layer before ``aorta.plugin``) reaches it without an import (tests/test_architecture.py).

Fixtures are the other seam, asked for by name: ``aorta_telemetry`` (aorta.telemetry.plugin) for the
``hw_queue`` fixture, ``fsdp_telemetry`` (aorta.telemetry.plugin) for ``fsdp_bench``, ``dist_env``
(aorta.fsdp.plugin) for the telemetry plugin's ``fsdp_telemetry_source``.

Hook names start with ``pytest_``: pytest collects only such names as hook implementations. Nothing here
imports torch (``aorta list`` and option parsing never do).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from aorta.device import Device
    from aorta.hw_queue.runner import BenchResult
    from aorta.options import AortaOptions


@pytest.hookspec(firstresult=True)
def pytest_aorta_options(config: pytest.Config) -> AortaOptions | None:
    """The run's shared options, resolved once (device to backend, default rounds and warm-up).

    Implemented by ``aorta.plugin``: the first call resolves them into ``config.stash``, every later call reads
    them back. Called by the FSDP plugin (at its configure, which runs first, and when it starts the process
    group) and by the gate (the settings saved with a baseline). For example:

    .. sourcecode:: python

        def pytest_configure(config):
            opts = config.hook.pytest_aorta_options(config=config)
            print(opts.backend, opts.rounds, opts.resolved_size)
    """


@pytest.hookspec(firstresult=True)
def pytest_aorta_session_device(config: pytest.Config) -> Device | None:
    """The session's one ``Device``, opened on first use (under torchrun: this rank's own GPU).

    Implemented by ``aorta.plugin`` (which also serves it as the ``aorta_device`` fixture and reads machine
    info from it). Called by the gate to check a baseline's machine before any benchmark runs. For example:

    .. sourcecode:: python

        def pytest_configure(config):
            props = config.hook.pytest_aorta_session_device(config=config).properties()
            print(props.backend, props.name)
    """


def pytest_aorta_bench_result(item: pytest.Item, result: BenchResult) -> None:
    """One hardware-queue benchmark's result, once the ``hw_queue`` fixture has recorded it.

    Called by the ``hw_queue`` fixture (``aorta.plugin``) for each recorded run (not for a reference run,
    ``record=False``, until a benchmark of its configuration records it: then during that test), during the test. Implemented by ``aorta.report.plugin``, which keeps the result on the
    item and writes its Chrome trace after the test (``--aorta-trace-dir``). For example:

    .. sourcecode:: python

        def pytest_aorta_bench_result(item, result):
            print(item.name, result.record.get("streams_requested"), len(result.run.rounds))
    """


@pytest.hookspec(firstresult=True)
def pytest_aorta_history_baseline(config: pytest.Config, ref: str, machine_model: str) -> dict | None:
    """``--aorta-compare history:STACK[:N]``: the last N runs of STACK on ``machine_model`` as a baseline
    document, read from the run history.

    Implemented by ``aorta.history.plugin``; called by the gate while it loads its baseline, before any run.
    Raises ``ValueError`` naming what is missing (no history, no such stack, too few runs). ``None``: no plugin
    answered (the history's plugin blocked). For example:

    .. sourcecode:: python

        def pytest_configure(config):
            doc = config.hook.pytest_aorta_history_baseline(
                config=config, ref="history:nvidia-h100-x1-cuda13.0-torch2.11.0", machine_model="nvidia-h100-x1"
            )
            print(len(doc["aorta_baseline"]["runs"]))
    """
