"""A baseline another process is saving is waited for with a limit, saying who holds it (issue 38, case 21):
not a silent wait without end. The holder is a child process holding the lock as a saver does."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from test_gate_offline import bench, run

from aorta.gate.baselines import baseline as bl
from aorta.processes import lock

REPO = Path(__file__).resolve().parents[2]

HOLDER = textwrap.dedent(
    """
    import sys, time
    from aorta.processes.lock import locked
    with locked(sys.argv[1]):
        print("held", flush=True)
        time.sleep(60)
    """
)


def test_a_save_waits_for_the_holder_with_a_limit_and_names_it(tmp_path, monkeypatch, capsys):
    path, _ = bl.save_baseline(run([bench("a", 10.0)]), tmp_path, "base", {})
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        monkeypatch.setattr(lock, "WAIT_S", 0.5)
        with pytest.raises(lock.LockBusy) as exc:
            bl.save_baseline(run([bench("a", 10.0, seed=2)]), tmp_path, "base", {})
        assert str(exc.value).startswith(f"the baseline is in use by pid {holder.pid} on ")
        assert f"(waited 0.5 s): lock {lock.lock_path(path)}; wait for it to finish, or stop it" in str(
            exc.value
        )
        assert f"aorta: the baseline is in use by pid {holder.pid} on " in capsys.readouterr().err
    finally:
        holder.kill()
        holder.communicate()
    assert bl.save_baseline(run([bench("a", 10.0, seed=3)]), tmp_path, "base", {})[1] == 2  # free again
