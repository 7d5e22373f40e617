"""The one redactor where pytest's own text leaves a run (issue 65, leftover 2).

A secret given by value (``--db-password X``, the password of ``--aorta-history postgresql://u:pw@h/db``,
``PGPASSWORD``) is registered as it enters (aorta/record/redact.py, ``register_entered``), and aorta's own lines
hide it. pytest printed it still: a traceback of aorta code quoting the value, ``-l``'s locals, a test's captured
output, the short test summary, the header, and the same in ``--junitxml``. Here each way pytest's text leaves
passes the same redactor:

- pytest's own lines outside the reporter (a usage error naming an option's value, "file or directory not
  found: ARG"): ``sys.stdout`` and ``sys.stderr`` are ``RedactingStream`` from the plugin's registration, before
  pytest starts capturing (capture puts back the streams it found: these);
- the terminal: the terminal reporter's stream is a ``RedactingStream`` from the moment the reporter registers
  (header, progress, tracebacks, summaries, warnings, live logs, INTERNALERROR lines: everything it writes);
- the reports: every test and collection report is redacted where it is made, before any plugin reads it
  (``--junitxml``, ``--report-log``, xdist's controller, the terminal's short summary), every string of it;
- ``--log-file``: its handler hides them in every record.

The node ids are kept as they are (pytest keys its bookkeeping on them).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Generator
from typing import Any

import pytest

from aorta.record.redact import RedactingStream, hide_registered, register_entered, registered

KEPT = frozenset({"nodeid", "location", "$report_type"})  # pytest's keys, never a secret's place


def _redact_std_streams() -> None:
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, RedactingStream):
            setattr(sys, name, RedactingStream(stream))


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """The first hook this plugin gets, as it registers (an installed aorta: before pytest captures anything):
    pytest's own lines on stdout and stderr pass the redactor from here on, the command line's secrets registered
    (a value the option parser refuses is quoted before any later hook runs)."""
    config = pluginmanager.get_plugin("pytestconfig")
    if config is not None:
        register_entered(list(config.invocation_params.args), os.environ)
    _redact_std_streams()


def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """Secrets registered as the command line and the environment enter, before anything is printed."""
    register_entered(list(early_config.invocation_params.args), os.environ)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Again where aorta is registered by a conftest file (no earlier hook of this plugin runs then)."""
    register_entered(list(config.invocation_params.args), os.environ)
    _redact_std_streams()


def pytest_plugin_registered(plugin: object, manager: pytest.PytestPluginManager) -> None:
    """The terminal reporter's stream redacted as soon as the reporter exists."""
    if manager.get_name(plugin) == "terminalreporter":
        writer = getattr(plugin, "_tw", None)
        stream = getattr(writer, "_file", None)
        if stream is not None and not isinstance(stream, RedactingStream):
            writer._file = RedactingStream(stream)  # type: ignore[union-attr]


class _HideSecrets(logging.Filter):
    """A log record's message with every registered secret hidden (formatted once, here)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if registered():
            text = record.getMessage()
            hidden = hide_registered(text)
            if hidden != text:
                record.msg, record.args = hidden, None
        return True


def _hidden(value: Any) -> Any:
    """``value`` (a report's builtin entries) with every registered secret hidden in each string, the types
    kept (a skip's tuple stays a tuple)."""
    if isinstance(value, str):
        return hide_registered(value)
    if isinstance(value, dict):
        return {k: (v if k in KEPT else _hidden(v)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_hidden(v) for v in value)
    return value


def redact_report(report: pytest.TestReport | pytest.CollectReport) -> None:
    """``report`` with every registered secret hidden, in place; untouched where none appears in it."""
    if not registered():
        return
    data = report._to_json()
    hidden = _hidden(data)
    if hidden == data:
        return
    clean = type(report)._from_json(hidden)
    for name, value in vars(clean).items():
        if name not in KEPT:
            setattr(report, name, value)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Generator[None, Any, Any]:
    report = yield
    redact_report(report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, Any, Any]:
    report = yield
    redact_report(report)
    return report


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """``--log-file``'s records hidden too (the logging plugin made its handler at configure time)."""
    logging_plugin = session.config.pluginmanager.get_plugin("logging-plugin")
    handler = getattr(logging_plugin, "log_file_handler", None)
    if isinstance(handler, logging.Handler) and not any(isinstance(f, _HideSecrets) for f in handler.filters):
        handler.addFilter(_HideSecrets())
