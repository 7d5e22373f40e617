"""A stop signal during a baseline's save (aorta/processes/child_process.py: held_stop, issue 65): the save ends
first, then the stop, with 128 + N and a line that says whether the baseline changed; "stopped" alone was said
though the baseline had been replaced. In this process: ``os._exit`` raises instead."""

from __future__ import annotations

import os
import signal

import pytest

from aorta.processes import child_process


class Exited(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


@pytest.fixture
def gate_handlers(monkeypatch):
    """The gate's stop handlers set (from the defaults), ``os._exit`` raising ``Exited``; all put back."""
    before = {sig: signal.getsignal(sig) for sig in child_process.STOP_SIGNALS}
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)

    def fake_exit(code: int) -> None:
        raise Exited(code)

    monkeypatch.setattr(os, "_exit", fake_exit)
    monkeypatch.setattr(child_process, "end_children", lambda grace_s=0.0: 0)
    child_process.exit_on_stop_signals("aorta gate")
    yield signal.getsignal(signal.SIGTERM)
    for sig, handler in before.items():
        signal.signal(sig, handler)
    child_process._STOPPING.clear()
    child_process._HELD.clear()


def test_a_sigterm_during_a_save_waits_for_it_and_says_the_baseline_changed(gate_handlers, capsys, tmp_path):
    saved: list[str] = []
    with pytest.raises(Exited) as exited:
        with child_process.held_stop(
            lambda: f"baseline 'b' was saved: {saved} changed" if saved else "not saved"
        ):
            gate_handlers(signal.SIGTERM, None)  # arrives mid-save: held
            (tmp_path / "b.json").write_text("{}")
            saved.append("b.json")
    assert exited.value.code == 128 + signal.SIGTERM
    assert (tmp_path / "b.json").exists()
    err = capsys.readouterr().err
    assert "aorta gate: stopped by SIGTERM" in err and "baseline 'b' was saved: ['b.json'] changed" in err


def test_a_sigterm_before_a_save_stops_at_once_and_outside_one_the_line_is_plain(gate_handlers, capsys):
    with pytest.raises(Exited) as exited:
        gate_handlers(signal.SIGTERM, None)
    assert exited.value.code == 143
    assert "baseline" not in capsys.readouterr().err


def test_a_save_that_fails_after_a_held_stop_says_it_was_not_saved(gate_handlers, capsys):
    with pytest.raises(Exited):
        with child_process.held_stop(lambda: "baseline 'b' NOT saved; the saved one, if any, is unchanged"):
            gate_handlers(signal.SIGTERM, None)
    assert "NOT saved; the saved one, if any, is unchanged" in capsys.readouterr().err


def test_save_run_says_the_baseline_changed_when_stopped_during_its_save(
    gate_handlers, capsys, monkeypatch, tmp_path
):
    from types import SimpleNamespace

    from aorta.gate.session import finish

    target = tmp_path / "b.json"

    def save_baseline(run, folder, name, resolved, **kw):
        gate_handlers(signal.SIGTERM, None)  # the stop comes while the file is replaced
        target.write_text("{}")
        return target, 1

    monkeypatch.setattr(finish.bl, "save_baseline", save_baseline)
    monkeypatch.setattr(finish, "rank", lambda: 0)
    settings = SimpleNamespace(min_effect=0.0, alpha=0.05, thresholds=[])
    opts = SimpleNamespace(settings=settings, baseline_dir=tmp_path, replace_baseline=False)
    config = SimpleNamespace(hook=SimpleNamespace(pytest_aorta_options=lambda config: SimpleNamespace()))
    with pytest.raises(Exited) as exited:
        finish.save_run({"benchmarks": []}, "b", opts, config, 0, 0)
    assert exited.value.code == 143
    assert f"baseline 'b' was saved before the stop: {target} changed" in capsys.readouterr().err
