"""Telemetry in the pytest run: options, the sampler around each benchmark, throttled rounds.

The ``hw_queue`` fixture asks for ``aorta_telemetry``; its sampler thread runs from the test's set-up
to its teardown, and ``review`` (called by the runner right after the timing loop, before metrics and
before pytest-benchmark's replay) summarizes the samples, flags throttled rounds and, for rounds with
a cause that is not the power limit (all of them with ``--aorta-drop-throttled``), drops and replaces them
(aorta/telemetry/round_policy.py). When ``--aorta-drop-throttled`` would drop every round, ``review`` raises
``AllRoundsThrottled`` (what it saw, as a sentence) and the ``hw_queue`` fixture fails the test: nothing in
the runner decides a test's outcome.

The FSDP suite's ``fsdp_bench`` asks for ``fsdp_telemetry``: each rank's GPU sampled over a scenario's timed
steps, summarised and never dropped (a step is one unit across ranks). Both suites reach telemetry through
these fixtures, by name (aorta/hookspec.py lists the seams): the suites are a layer before this one.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field, replace

import pytest

from aorta.telemetry.round_policy import handling, handling_record, reading_note, rounds_to_drop
from aorta.telemetry.sampler import Sampler
from aorta.telemetry.sources import SOURCES, open_source
from aorta.telemetry.summary import summarize, unavailable_summary
from aorta.telemetry.throttle import AllRoundsThrottled

DEFAULT_INTERVAL_MS = 100
MAX_INTERVAL_MS = 60_000


def parse_telemetry_interval_ms(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--aorta-telemetry-interval-ms={text!r}: not an integer; give milliseconds from 0 (off) "
            f"to {MAX_INTERVAL_MS}"
        ) from None
    if not 0 <= value <= MAX_INTERVAL_MS:
        raise argparse.ArgumentTypeError(
            f"--aorta-telemetry-interval-ms={text!r}: allowed 0 (off) to {MAX_INTERVAL_MS}"
        )
    return value


def parse_telemetry_source(text: str) -> str:
    allowed = ("auto", *SOURCES)
    if text not in allowed:
        raise argparse.ArgumentTypeError(
            f"--aorta-telemetry-source={text!r}: allowed values are {', '.join(allowed)}"
        )
    return text


@dataclass(frozen=True, kw_only=True)
class TelemetryOptions:
    interval_ms: int
    drop_throttled: bool
    source: str


@dataclass
class TelemetryState:
    throttled: list[str] = field(default_factory=list)  # one line per benchmark with throttled rounds
    unavailable_reason: str | None = None
    limits: object | None = None  # the source's Limits, read once per session (static)


TELEMETRY_OPTIONS = pytest.StashKey[TelemetryOptions]()
TELEMETRY_STATE = pytest.StashKey[TelemetryState]()


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("aorta", "aorta GPU benchmarks")
    g.addoption(
        "--aorta-telemetry-interval-ms",
        type=parse_telemetry_interval_ms,
        default=DEFAULT_INTERVAL_MS,
        metavar="MS",
        help=f"GPU telemetry sampling interval during each benchmark (default "
        f"{DEFAULT_INTERVAL_MS}; 0 turns telemetry off)",
    )
    g.addoption(
        "--aorta-telemetry-source",
        type=parse_telemetry_source,
        default="auto",
        help="auto (NVML, else nvidia-smi; amdsmi, else rocm-smi) or one of " + ", ".join(SOURCES),
    )
    g.addoption(
        "--aorta-drop-throttled",
        action="store_true",
        default=False,
        help="drop every throttled round, the power limit's too, and replace it by a new round (without it: "
        "transient causes only; the record's throttle_handling says what was done)",
    )


def pytest_configure(config: pytest.Config) -> None:
    opts = TelemetryOptions(
        interval_ms=config.getoption("aorta_telemetry_interval_ms"),
        drop_throttled=config.getoption("aorta_drop_throttled"),
        source=config.getoption("aorta_telemetry_source"),
    )
    if opts.drop_throttled and opts.interval_ms == 0:
        raise pytest.UsageError(
            "--aorta-drop-throttled needs telemetry, but --aorta-telemetry-interval-ms=0 "
            "turns it off: give an interval > 0 or leave out --aorta-drop-throttled"
        )
    config.stash[TELEMETRY_OPTIONS] = opts
    config.stash[TELEMETRY_STATE] = TelemetryState()


@pytest.fixture(scope="session")
def aorta_telemetry_source(pytestconfig: pytest.Config, aorta_device):
    """``(source, None)`` opened once per session, or ``(None, reason)``."""
    opts = pytestconfig.stash[TELEMETRY_OPTIONS]
    if opts.interval_ms == 0:
        yield None, "telemetry off (--aorta-telemetry-interval-ms=0)"
        return
    try:
        pci = aorta_device.pci_bus_id()
    except Exception:  # the index still identifies the GPU where CUDA_VISIBLE_DEVICES is unset
        pci = None
    source, reason = open_source(aorta_device.backend, aorta_device.index, pci, opts.source)
    pytestconfig.stash[TELEMETRY_STATE].unavailable_reason = reason
    yield source, reason
    if source is not None:
        source.close()


class Monitor:
    """One benchmark's sampler and the review of its timed rounds."""

    def __init__(self, request, source, reason: str | None, opts: TelemetryOptions):
        self._node = request.node.name
        self._state = request.config.stash[TELEMETRY_STATE]
        self._opts = opts
        self._source = source
        self._reason = reason
        self.sampler = Sampler(source, opts.interval_ms / 1e3).start() if source is not None else None

    def review(self, run, more=None):
        """``(run, extra)``: the rounds to keep and ``{"telemetry": summary, "throttle_handling": ...}`` for
        extra_info, with ``reading_notes`` where the rounds ran at the power limit. Throttled rounds are handled by their cause (``aorta.telemetry.round_policy``): a
        dropped round is replaced through ``more(n)`` (times ``n`` new rounds: a ``TimedRun``), where given.
        Raises ``AllRoundsThrottled`` where ``--aorta-drop-throttled`` would keep no round."""
        if self.sampler is None:
            summary = unavailable_summary(self._reason or "no telemetry source")
            if self._opts.drop_throttled:
                summary["dropped_rounds"] = 0
            return run, {"telemetry": summary, "unavailable": {"telemetry": summary["reason"]}}
        if self._state.limits is None:
            self._state.limits = self._source.limits()
        summary, causes = self._summary(run)
        n = len(run.rounds)
        drop_all = self._opts.drop_throttled
        new_rounds, new_causes = [], []
        if rounds_to_drop(causes, drop_all=drop_all) and more is not None:
            extra = more(len(rounds_to_drop(causes, drop_all=drop_all)))
            time.sleep(self._opts.interval_ms / 1e3)  # a sample after the last new round
            new_rounds, new_causes = extra.rounds, self._summary(extra)[1]
        policy, dropped, kept_new = handling(causes, new_causes, drop_all=drop_all)
        if policy == "kept_throttled" and drop_all:
            raise AllRoundsThrottled(n, summary["throttle_causes"])
        gone = set(dropped)
        kept = [r for i, r in enumerate(run.rounds) if i not in gone] + [new_rounds[i] for i in kept_new]
        if drop_all or dropped:
            summary["dropped_rounds"] = len(dropped)
            summary["dropped_round_indices"] = list(dropped)
        record = handling_record(policy, causes, dropped, len(new_rounds), len(kept))
        if summary["throttled_rounds"]:
            seen = ", ".join(f"{c} ({k})" for c, k in summary["throttle_causes"].items())
            self._state.throttled.append(
                f"{self._node}: {summary['throttled_rounds']}/{n} rounds throttled: {seen}; {policy} "
                f"({record['rounds_kept']} rounds kept, {len(new_rounds)} added)"
            )
        extra = {"telemetry": summary, "throttle_handling": record}
        note = reading_note(record)
        if note:  # the record's reading notes: the runner adds them beside its own
            extra["reading_notes"] = [note]
        return replace(run, rounds=kept), extra

    def _summary(self, run):
        spans = [(r.host_start_s, r.host_end_s) for r in run.rounds]
        summary, causes = summarize(
            self.sampler.samples(),
            source=self._source.name,
            interval_ms=self._opts.interval_ms,
            limits=self._state.limits,
            spans_s=spans,
        )
        if self.sampler.errors:
            summary["read_errors"] = self.sampler.errors
            summary["first_read_error"] = self.sampler.first_error
        if self.sampler.gave_up:
            summary["sampler_stopped"] = self.sampler.gave_up
        return summary, causes

    def stop(self) -> None:
        if self.sampler is not None:
            self.sampler.stop()


@pytest.fixture
def aorta_telemetry(request, pytestconfig: pytest.Config, aorta_telemetry_source):
    """The sampler for this test: started at set-up, stopped at teardown."""
    source, reason = aorta_telemetry_source
    monitor = Monitor(request, source, reason, pytestconfig.stash[TELEMETRY_OPTIONS])
    yield monitor
    monitor.stop()


@pytest.fixture(scope="session")
def fsdp_telemetry_source(pytestconfig: pytest.Config, dist_env):
    """``(source, None)`` for this rank's GPU, opened once per session, or ``(None, reason)``
    (``--aorta-telemetry-interval-ms`` and ``--aorta-telemetry-source`` apply as to every benchmark)."""
    opts = pytestconfig.stash[TELEMETRY_OPTIONS]
    if opts.interval_ms == 0:
        yield None, "telemetry off (--aorta-telemetry-interval-ms=0)"
        return
    device = dist_env.device
    source, reason = open_source(device.backend, device.index, device.pci_bus_id(), opts.source)
    yield source, reason
    if source is not None:
        source.close()


def observer(interval_ms: int, source, reason: str | None):
    """``(observe, stop)``: ``observe(run)`` summarises this rank's GPU over the timed steps of ``run``
    (aorta/telemetry/summary.py; no step dropped: aorta/fsdp/rank_telemetry.py); ``stop()`` ends sampling."""
    if source is None:
        return (lambda run: unavailable_summary(reason or "no telemetry source")), (lambda: None)
    sampler = Sampler(source, interval_ms / 1e3).start()

    def observe(run) -> dict:
        summary, _ = summarize(
            sampler.samples(),
            source=source.name,
            interval_ms=interval_ms,
            limits=source.limits(),
            spans_s=[(r.host_start_s, r.host_end_s) for r in run.rounds],
        )
        return summary

    return observe, sampler.stop


@pytest.fixture
def fsdp_telemetry(pytestconfig: pytest.Config, fsdp_telemetry_source):
    """``fsdp_telemetry()``: ``(observe, stop)`` (``observer``) for one FSDP scenario on this rank's GPU,
    sampling from the call until ``stop()``."""

    def start():
        return observer(pytestconfig.stash[TELEMETRY_OPTIONS].interval_ms, *fsdp_telemetry_source)

    return start


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(TELEMETRY_STATE, None)
    if state is None or not state.throttled:
        return
    terminalreporter.section("aorta: GPU throttled during benchmarks")
    for line in state.throttled:
        terminalreporter.write_line(line, yellow=True)
    if not config.stash[TELEMETRY_OPTIONS].drop_throttled:
        terminalreporter.write_line("(rerun with --aorta-drop-throttled to discard those rounds)")
