"""Bad input is a usage error naming the option, the value and what is allowed, before any benchmark runs."""

import pytest

pytestmark = pytest.mark.slow  # every test starts a pytest subprocess (seconds each)

BAD = [
    ("--aorta-streams=0", "--aorta-streams='0': 0 is out of range; allowed 1 to 1024"),
    ("--aorta-streams=-3", "--aorta-streams='-3': -3 is out of range; allowed 1 to 1024"),
    ("--aorta-streams=abc", "--aorta-streams='abc': 'abc' is not an integer"),
    ("--aorta-streams=1,,4", "--aorta-streams='1,,4': '' is not an integer"),
    ("--aorta-streams=100000", "--aorta-streams='100000': 100000 is out of range; allowed 1 to 1024"),
    ("--aorta-rounds=0", "--aorta-rounds='0': 0 is out of range; allowed 1 to 100000"),
    ("--aorta-device=tpu", "--aorta-device='tpu': allowed values are auto, cuda, rocm, cpu"),
    ("--aorta-sync-mode=sometimes", "--aorta-sync-mode='sometimes': allowed values are per_round, end_only"),
    ("--aorta-issue-order=sideways", "--aorta-issue-order='sideways': 'sideways' is not allowed"),
]


@pytest.mark.parametrize("arg,message", BAD, ids=[b[0] for b in BAD])
def test_bad_option_is_a_usage_error(run_pytest, pytester, arg, message):
    pytester.makepyfile(test_never="def test_never():\n    raise AssertionError('must not run')\n")
    result = run_pytest(arg)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()
    assert "must not run" not in result.stdout.str()


def test_a_wrong_profiler_recording_is_a_usage_error_before_any_benchmark(run_pytest, pytester, monkeypatch):
    monkeypatch.setenv("AORTA_PROFILER_RECORDING", "all")
    pytester.makepyfile(test_never="def test_never():\n    raise AssertionError('must not run')\n")
    result = run_pytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "AORTA_PROFILER_RECORDING='all': allowed values are user_scope, full" in result.stderr.str()
    assert "must not run" not in result.stdout.str()


def test_gpu_backend_on_a_machine_without_one_is_a_usage_error(run_pytest, pytester):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    pytester.makepyfile(test_never="def test_never():\n    pass\n")
    result = run_pytest("--aorta-device=cuda")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--aorta-device=cuda: torch sees no GPU" in result.stderr.str()


def test_the_option_set_is_frozen(pytester):
    """Every aorta command-line option, with its aliases: adding or renaming one is a deliberate change here
    (and in the docs), never a side effect."""
    parser = pytester.parseconfig()._parser
    names = sorted(
        name
        for group in parser._groups
        if group.name.startswith("aorta")
        for option in group.options
        for name in option.names()
    )
    assert names == sorted(
        [
            # aorta.plugin (the old spellings without the --aorta- prefix stay as aliases)
            "--aorta-streams",
            "--streams",
            "--aorta-rounds",
            "--rounds",
            "--aorta-kernel-pass-rounds",
            "--aorta-warmup",
            "--warmup",
            "--aorta-sync-mode",
            "--sync-mode",
            "--aorta-device",
            "--aorta-size",
            "--aorta-issue-order",
            "--issue-order",
            "--aorta-iterations",
            "--aorta-copy-mb",
            "--copy-mb",
            "--aorta-extra-deps",
            "--aorta-mode",
            # aorta.telemetry.plugin
            "--aorta-telemetry-interval-ms",
            "--aorta-telemetry-source",
            "--aorta-drop-throttled",
            # aorta.report.plugin
            "--aorta-trace-dir",
            # aorta.gate.plugin
            "--aorta-save-baseline",
            "--aorta-replace-baseline",
            "--aorta-compare",
            "--aorta-baseline-dir",
            "--aorta-runs-dir",
            "--aorta-allow-mismatch",
            "--aorta-allow-env-diff",
            "--aorta-runs",
            "--aorta-confirm",
            "--aorta-max-mde",
            "--aorta-order-seed",
            "--aorta-only-file",
            "--aorta-min-effect",
            "--aorta-threshold",
            "--aorta-alpha",
            "--aorta-verdict-json",
            "--aorta-markdown",
            "--aorta-test-slowdown",
            "--aorta-budget",
            "--aorta-lean-run",
            "--aorta-min-judged",
            "--aorta-check-run",
            # aorta.history.plugin
            "--aorta-history",
            # aorta.fsdp.plugin (the old spelling --override stays as an alias)
            "--aorta-config",
            "--aorta-override",
            "--override",
            "--aorta-dist-timeout",
            "--aorta-test-comm-ballast",
            "--aorta-artifacts",
        ]
    )
    # and no aorta option hides in another group
    strays = [
        name
        for group in parser._groups
        if not group.name.startswith("aorta")
        for option in group.options
        for name in option.names()
        if name.startswith("--aorta")
    ]
    assert strays == []


def test_old_spellings_still_work(run_pytest, pytester):
    pytester.makepyfile(
        test_opts="def test_opts(aorta_options):\n"
        "    assert (aorta_options.streams, aorta_options.rounds, aorta_options.warmup,"
        " aorta_options.sync_mode, aorta_options.issue_order, aorta_options.copy_mb)"
        " == ((2, 3), 4, 0, 'end_only', ('depth',), 2.0)\n"
    )
    result = run_pytest(
        "--streams=2,3",
        "--rounds=4",
        "--warmup=0",
        "--sync-mode=end_only",
        "--issue-order=depth",
        "--copy-mb=2",
        "--aorta-device=cpu",
    )
    assert result.ret == 0, result.stdout.str()
