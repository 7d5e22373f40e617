"""FSDP configuration: every override applies, bad keys and values are usage errors naming them."""

import pytest

from aorta.fsdp.config import CONFIG_DIR, ConfigError, load_config, parse_override

pytest_plugins = ["pytester"]


def test_defaults_load_and_smoke_shrinks_the_model():
    full, smoke = load_config(), load_config(smoke=True)
    assert full.model.d_model == 2048 and full.training.steps == 10
    assert smoke.model.d_model < full.model.d_model and smoke.training.steps < full.training.steps


def test_all_overrides_apply_in_order():
    cfg = load_config(
        overrides=[
            "training.steps=20",
            "model.n_layers=3",
            "training.steps=25",
            "compile.enabled=false",
            "training.lr=3e-4",
        ]
    )
    assert (cfg.training.steps, cfg.model.n_layers, cfg.compile.enabled) == (25, 3, False)
    assert cfg.training.lr == pytest.approx(3e-4)


def test_override_value_is_yaml():
    assert parse_override("a.b=[1, 2]") == (["a", "b"], [1, 2])
    assert parse_override("a.b=true") == (["a", "b"], True)
    assert parse_override("a.b=bf16") == (["a", "b"], "bf16")


@pytest.mark.parametrize(
    "override, words",
    [
        ("model.hidden=4", ["model.hidden", "allowed keys under model", "d_model"]),
        ("modle.d_model=4", ["modle", "allowed keys", "model"]),
        ("training.steps=ten", ["training.steps='ten'", "expected int"]),
        ("training.steps=0", ["training.steps=0", ">= 1"]),
        ("fsdp.param_dtype=int8", ["fsdp.param_dtype='int8'", "bf16, fp16, fp32"]),
        ("compile.enabled=1", ["compile.enabled=1", "expected bool"]),
        ("model.d_model=100", ["model.d_model=100", "multiple of model.n_heads"]),
        ("training.steps", ["key.path=value"]),
        ("model=3", ["model=3", "expected a mapping"]),
    ],
)
def test_bad_override_names_key_value_and_what_is_allowed(override, words):
    with pytest.raises(ConfigError) as info:
        load_config(overrides=[override])
    for w in words:
        assert w in str(info.value)


def test_missing_config_file_is_named(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        load_config(tmp_path / "nope.yaml")


def test_config_file_then_overrides(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("training:\n  steps: 7\nmodel:\n  n_layers: 2\n")
    cfg = load_config(f, ["model.n_layers=5"])
    assert (cfg.training.steps, cfg.model.n_layers, cfg.model.d_model) == (7, 5, 2048)


def test_bad_override_is_a_usage_error_on_the_command_line(pytester):
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest_inprocess(
        "--aorta-override", "training.steps=20", "--aorta-override", "model.widht=3"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown key 'model.widht'; allowed keys under model:*"])


def test_bad_timeout_is_a_usage_error(pytester):
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest_inprocess("--aorta-dist-timeout", "-5")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--aorta-dist-timeout='-5': give seconds > 0 and at most 86400 (a day)*"])


@pytest.mark.parametrize(
    "text, words",
    [
        ("model: 3\n", ["model=3", "expected a mapping of keys (a section), got int"]),
        ("training:\n  steps: abc\n", ["training.steps='abc'", "expected int, got str"]),
    ],
)
def test_a_bad_config_file_is_named_even_where_smoke_sizes_replace_it(pytester, text, words):
    """smoke.yaml replaces model and training on CPU: the user's file is checked before that merge."""
    pytester.makepyfile("def test_x():\n    pass\n")
    bad = pytester.path / "bad.yaml"
    bad.write_text(text)
    result = pytester.runpytest_inprocess("--aorta-config", str(bad), "--aorta-device", "cpu")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    line = next(line for line in result.stderr.lines if "--aorta-config" in line)
    for w in [f"--aorta-config '{bad}'", *words]:
        assert w in line, line


def test_a_valid_config_file_still_loads_at_smoke_size(pytester):
    pytester.makepyfile("def test_steps(fsdp_config):\n    assert fsdp_config.training.lr == 0.5\n")
    good = pytester.path / "good.yaml"
    good.write_text("model:\n  n_layers: 3\ntraining:\n  steps: 7\n  lr: 0.5\n")
    result = pytester.runpytest_inprocess("--aorta-config", str(good), "--aorta-device", "cpu")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize(
    "args, steps",
    [
        ((), (2, 1)),  # smoke.yaml's counts
        (("--aorta-rounds", "6", "--aorta-warmup", "0"), (6, 0)),  # a scenario's rounds are its steps
        (
            ("--aorta-rounds", "6", "--aorta-override", "training.steps=9"),
            (9, 1),
        ),  # an explicit override wins
    ],
)
def test_aorta_rounds_and_warmup_set_the_fsdp_step_counts(pytester, args, steps):
    pytester.makepyfile(
        "def test_steps(fsdp_config):\n"
        f"    assert (fsdp_config.training.steps, fsdp_config.training.warmup_steps) == {steps}\n"
    )
    result = pytester.runpytest_inprocess("--aorta-device", "cpu", *args)
    result.assert_outcomes(passed=1)


def test_the_large_configuration_loads_and_is_larger_in_every_dimension_that_fills_a_gpu():
    full, large = load_config(), load_config(CONFIG_DIR / "large.yaml")
    assert large.model.d_model == 2 * full.model.d_model and large.model.n_layers == 2 * full.model.n_layers
    tokens = large.dataset.batch_size * large.dataset.seq_len
    assert tokens >= full.dataset.batch_size * full.dataset.seq_len
    assert large.profiling.reference is False  # no unsharded replica of a model this size
