"""Bad input is a usage error naming the option, the value and what is allowed, before any benchmark runs."""

import pytest

pytestmark = pytest.mark.slow  # every test starts a pytest subprocess (seconds each)

BAD = [
    ("--streams=0", "--streams='0': 0 is out of range; allowed 1 to 1024"),
    ("--streams=-3", "--streams='-3': -3 is out of range; allowed 1 to 1024"),
    ("--streams=abc", "--streams='abc': 'abc' is not an integer"),
    ("--streams=1,,4", "--streams='1,,4': '' is not an integer"),
    ("--streams=100000", "--streams='100000': 100000 is out of range; allowed 1 to 1024"),
    ("--rounds=0", "--rounds='0': 0 is out of range; allowed 1 to 100000"),
    ("--aorta-device=tpu", "--aorta-device='tpu': allowed values are auto, cuda, rocm, cpu"),
    ("--sync-mode=sometimes", "--sync-mode='sometimes': allowed values are per_round, end_only"),
    ("--issue-order=sideways", "--issue-order='sideways': 'sideways' is not allowed"),
]


@pytest.mark.parametrize("arg,message", BAD, ids=[b[0] for b in BAD])
def test_bad_option_is_a_usage_error(run_pytest, pytester, arg, message):
    pytester.makepyfile(test_never="def test_never():\n    raise AssertionError('must not run')\n")
    result = run_pytest(arg)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()
    assert "must not run" not in result.stdout.str()


def test_gpu_backend_on_a_machine_without_one_is_a_usage_error(run_pytest, pytester):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    pytester.makepyfile(test_never="def test_never():\n    pass\n")
    result = run_pytest("--aorta-device=cuda")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--aorta-device=cuda: torch sees no GPU" in result.stderr.str()
