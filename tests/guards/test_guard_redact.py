"""The redactor's guards word for word (aorta/record/redact.py, issue 58): a URL's password hidden by the URL
rule alone (no known secret to fall back on), a password that holds ``:`` or ``=`` hidden whole, the pieces a
driver may quote back, and what is not a password left as it is."""

from __future__ import annotations

import pytest

from aorta.record.redact import env_secrets, redact_argv, redact_text, url_password, url_secrets


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("postgresql://ann:s3cret@db/h", "postgresql://ann:***@db/h"),  # the URL rule alone, no secret given
        ("postgresql://ann:p:ss@db/h", "postgresql://ann:***@db/h"),  # a ':' in the password: hidden whole
        ("see postgresql://ann:x@y@db:5432/h now", "see postgresql://ann:***@db:5432/h now"),
        ("postgresql://db:5432/h", "postgresql://db:5432/h"),  # no userinfo: a port is no password
        ("postgresql://ann@db/h", "postgresql://ann@db/h"),  # a user without a password
    ],
)
def test_a_urls_password_is_hidden_by_the_url_rule_and_nothing_else_is(text, shown):
    assert redact_text(text) == shown


def test_the_password_is_everything_after_the_first_colon_of_the_userinfo():
    assert url_password("postgresql://ann:p:ss@db/h") == "p:ss"
    assert url_password("postgresql://ann@db/h") == ""  # no password
    assert url_password("not a url") == ""
    assert url_password("postgresql://db/h") == ""


def test_the_pieces_a_driver_may_quote_back_are_each_side_of_every_at_colon_and_slash():
    # cuts at '@' (2) and ':' (7): after them "cdef:ghi", "ghi"; before them "ab" (too short), "ab@cdef"
    assert url_secrets("postgresql://u:ab@cdef:ghi@db/h") == ["ab@cdef:ghi", "cdef:ghi", "ghi", "ab@cdef"]


def test_a_password_that_holds_an_equals_sign_is_hidden_wherever_the_command_line_repeats_it():
    argv = ["aorta", "--history=postgresql://ann:p=wd1@db/h", "--note=p=wd1"]
    assert redact_argv(argv) == ["aorta", "--history=postgresql://ann:***@db/h", "--note=***"]


def test_the_secrets_of_an_environment_are_its_secret_named_values_of_four_characters_or_more():
    env = {"PGPASSWORD": "abcd", "MY_TOKEN": "abc", "HOME": "/root", "API_KEY": "k3y-long"}
    assert env_secrets(env) == ["abcd", "k3y-long"]
