"""An FSDP configuration refused or noted up front (issue 38, cases 17, 18, 19): ``--aorta-dist-timeout inf``
refused with its range (it passed "> 0" and overflowed at setup), a YAML alias bomb refused at once with a
short line (it gave a 4.3 MB error line or MemoryError after 63 s), and each value of the user's
``--aorta-config`` that smoke sizes replace named (``d_model: 1e9`` was recorded as 32 without a word)."""

import argparse
import time

import pytest

from aorta.fsdp.config import ConfigError, load_config, load_config_noting
from aorta.fsdp.plugin import parse_timeout

BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
    for p, c in zip("abcdefgh", "bcdefghi")
)


@pytest.mark.parametrize("text", ["inf", "nan", "1e400", "86401", "0", "-5"])
def test_a_dist_timeout_out_of_range_is_refused_naming_the_range(text):
    with pytest.raises(argparse.ArgumentTypeError, match=r"give seconds > 0 and at most 86400 \(a day\)"):
        parse_timeout(text)
    assert parse_timeout("300") == 300.0 and parse_timeout("86400") == 86400.0


def test_a_yaml_alias_bomb_is_refused_at_once_with_a_short_line(tmp_path):
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(BOMB)
    t0 = time.monotonic()
    with pytest.raises(ConfigError) as exc:
        load_config(bomb)
    assert time.monotonic() - t0 < 1.0 and len(str(exc.value)) < 300
    assert str(exc.value).startswith(
        f"--aorta-config {str(bomb)!r}: not valid YAML (line 1, column 4: an anchor"
    )


def test_an_alias_in_an_override_is_refused_too():
    with pytest.raises(
        ConfigError, match=r"--aorta-override .*: value is not valid YAML \(line 1, .*anchor or alias"
    ):
        load_config(None, ["model.d_model=&a [1, *a]"])


def test_the_users_values_that_smoke_sizes_replace_are_named(tmp_path):
    mine = tmp_path / "mine.yaml"
    mine.write_text("model:\n  d_model: 1000000000\n  n_heads: 2\n")
    cfg, replaced = load_config_noting(mine, smoke=True)
    assert cfg.model.d_model == 32
    assert replaced == ["model.d_model: 1000000000 -> 32"]  # n_heads: 2 is smoke's own value: not replaced
    assert load_config_noting(mine, smoke=False)[1] == []
    assert load_config_noting(None, smoke=True)[1] == []  # the default file: smoke sizes are the point


def test_the_run_says_so_in_its_header(pytester):
    pytester.makepyfile("def test_x():\n    pass\n")
    (pytester.path / "mine.yaml").write_text("model:\n  d_model: 1000000000\n")
    r = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "--aorta-config", "mine.yaml", "--aorta-size", "smoke"
    )
    assert r.ret == 0
    r.stdout.fnmatch_lines(
        [
            "aorta fsdp: note: --aorta-config mine.yaml: at smoke size (--aorta-size smoke) config/smoke.yaml "
            "replaces 1 of its values: model.d_model: 1000000000 -> 32; --aorta-size full keeps them"
        ]
    )
