"""Options that take one integer refuse a list, even one whose values repeat (``--aorta-rounds=4,4`` is no 4):
parsed on the command line as pytest parses it, a usage error naming the option, the value and what is allowed."""

import pytest


@pytest.mark.parametrize("option", ["--aorta-rounds", "--aorta-warmup", "--aorta-iterations"])
@pytest.mark.parametrize("value", ["4,4", "4,8"])
def test_an_option_of_one_integer_given_a_list_is_a_usage_error(pytester, option, value):
    with pytest.raises(pytest.UsageError, match=f"{option}='{value}': give one integer from "):
        pytester.parseconfig(f"{option}={value}")


def test_an_option_of_one_integer_takes_one(pytester):
    config = pytester.parseconfig("--aorta-rounds=4", "--aorta-warmup=0", "--aorta-streams=4,4,16")
    assert (config.getoption("aorta_rounds"), config.getoption("aorta_warmup")) == (4, 0)
    assert config.getoption("aorta_streams") == (4, 16)  # a list option drops repeats
