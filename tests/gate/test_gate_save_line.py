"""The save line never suggests what the run's launcher refuses (issue 38, case 26): under torchrun it says to
launch again with the same name, not ``--aorta-runs N`` (which torchrun refuses). (A pytest run with
WORLD_SIZE=2 but no torchrun cannot start: the hint is tested as the plugin calls it.)"""

from aorta.gate.baselines.save_line import one_run_hint


def test_under_torchrun_the_one_run_hint_is_to_launch_again():
    hint = one_run_hint(multi_rank=True)
    assert "--aorta-runs" not in hint
    assert hint.startswith("1 run: launch torchrun again with the same --aorta-save-baseline NAME")


def test_outside_torchrun_it_names_fresh_process_runs():
    assert "--aorta-runs N" in one_run_hint(multi_rank=False)
