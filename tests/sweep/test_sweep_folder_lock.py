"""One sweep at a time per folder (issue 38, case 4): a second ``aorta sweep`` into a folder a running sweep
holds is refused at once (exit 2), naming the first one's pid and the lock, before it runs or removes
anything; the first goes on untouched."""

import os
import signal

import pytest
from test_sweep_faults import alive, start_sweep, wait_gone

from aorta.cli import main
from aorta.exit_codes import EXIT_USAGE


@pytest.mark.parametrize("how", ["forked", pytest.param("python", marks=pytest.mark.slow)])
def test_a_second_sweep_into_a_busy_folder_is_refused_naming_the_first(tmp_path, capsys, how):
    """The first sweep forked from this process in the fast tier, a fresh Python in the slow tier."""
    first, pids_file, out = start_sweep(tmp_path, how)
    pids = [int(p) for p in pids_file.read_text().split()]
    try:
        code = main(["sweep", "--grid", "NCCL_NTHREADS=256", "--output", str(out), "--", "pytest"])
        err = capsys.readouterr().err
        assert code == EXIT_USAGE, err
        assert (
            f"aorta sweep: error: --output {out}: the sweep folder {out} is in use by pid {first.pid} on "
            in err
        )
        assert f"lock {out.parent / ('.' + out.name + '.lock')}" in err
        assert all(alive(p) for p in pids)  # the first sweep's cell runs on
    finally:
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=30)
        for pid in wait_gone(pids, 5):
            os.kill(pid, signal.SIGKILL)
