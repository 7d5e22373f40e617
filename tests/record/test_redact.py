"""No password is printed or written (issue 46, class 3): database URLs, command lines in logs and environments
in records pass through one redactor, whatever characters the password holds."""

from __future__ import annotations

import pytest

from aorta.record.redact import (
    SECRET_NAME,
    conninfo_secrets,
    launcher_secrets,
    libpq_fields,
    redact_argv,
    redact_env,
    redact_text,
    redact_url,
    url_password,
)


@pytest.mark.parametrize(
    "url,shown",
    [
        (
            "postgresql://ann:p@ss@w0rd@db.example:5432/h",
            "postgresql://ann:***@db.example:5432/h",
        ),  # @ inside
        ("postgresql://ann:a:b/c?d@db/h", "postgresql://ann:***@db/h"),  # : / ? inside
        (
            "postgresql://ann@db/h?password=hunter2&sslmode=require",
            "postgresql://ann@db/h?password=***&sslmode=require",
        ),
        ("postgres://db/h?sslpassword=k3y", "postgres://db/h?sslpassword=***"),
        ("postgresql://ann@db/h", "postgresql://ann@db/h"),  # nothing to hide
    ],
)
def test_a_url_is_printed_with_its_password_hidden_whatever_it_holds(url, shown):
    assert redact_url(url) == shown


def test_the_password_is_read_as_the_driver_reads_it():
    assert url_password("postgresql://ann:p@ss@w0rd@db/h") == "p@ss@w0rd"
    assert url_password("postgresql://ann:p%40ss@db/h") == "p@ss"


def test_a_driver_error_that_quotes_a_piece_of_the_password_back_is_hidden_too():
    """libpq splits ``ann:p@ss@w0rd@db`` at the first @ and names the host ``ss@w0rd@db``."""
    url = "postgresql://ann:p@ss@w0rd@db/h"
    said = redact_url(url + " failed to resolve host 'ss@w0rd@db'")
    assert "w0rd" not in said and "ss@" not in said


def test_a_command_line_hides_urls_password_words_and_secret_settings():
    argv = [
        "python",
        "-m",
        "pytest",
        "--aorta-history=postgresql://ann:S3cret!@db/h",
        "-o",
        "x=S3cret!",
        "PGPASSWORD=pw12",
    ]
    line = " ".join(redact_argv(argv))
    assert "S3cret" not in line and "pw12" not in line
    assert "postgresql://ann:***@db/h" in line


def test_an_environment_hides_secret_named_variables_and_known_secrets_elsewhere():
    env = {"PGPASSWORD": "hunter22", "API_TOKEN": "t0k3n", "NOTE": "uses hunter22", "PATH": "/usr/bin"}
    assert redact_env(env, ["hunter22"]) == {
        "PGPASSWORD": "***",
        "API_TOKEN": "***",
        "NOTE": "uses ***",
        "PATH": "/usr/bin",
    }


def test_libpq_keyword_strings_hide_the_password():
    assert redact_text("host=db password='a b' user=ann") == "host=db password=*** user=ann"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        # libpq allows spaces around '=': the NAME=VALUE rule reads no word there, the password rule alone hides it
        ("host=db password = 'a b' user=ann", "host=db password = *** user=ann"),
        ('host=db password = "a b" user=ann', "host=db password = *** user=ann"),
        ("host=db password = ab user=ann", "host=db password = *** user=ann"),
        # ODBC's Pwd is no secret-looking environment name: the password rule alone hides it, quoted or not
        (
            "Driver={PostgreSQL};Server=db;Uid=ann;Pwd='a b';",
            "Driver={PostgreSQL};Server=db;Uid=ann;Pwd=***;",
        ),
        (
            'Driver={PostgreSQL};Server=db;Uid=ann;Pwd="a b";',
            "Driver={PostgreSQL};Server=db;Uid=ann;Pwd=***;",
        ),
        ("Driver={PostgreSQL};Server=db;Uid=ann;Pwd=ab;", "Driver={PostgreSQL};Server=db;Uid=ann;Pwd=***;"),
    ],
    ids=[
        "libpq-spaced-single",
        "libpq-spaced-double",
        "libpq-spaced-bare",
        "odbc-single",
        "odbc-double",
        "odbc-bare",
    ],
)
def test_a_password_the_name_value_rule_cannot_read_is_hidden_in_each_quoting(text, shown):
    assert redact_text(text) == shown


@pytest.mark.parametrize(
    "name",
    ["password", "passwd", "pwd", "sslpassword", "token", "secret", "AccountKey", "SharedAccessKey", "sig"],
)
def test_every_keyword_the_password_rule_names_is_hidden_spaced_and_quoted(name):
    # Spaced around '=' and quoted with a space inside: only the password rule reads these (the NAME=VALUE
    # rule takes no spaces), so each of its keywords is seen alone.
    assert redact_text(f"a {name} = 'x y' b") == f"a {name} = *** b"
    assert redact_text(f'a {name} = "x y" b') == f"a {name} = *** b"


def test_an_azure_sas_signature_is_hidden_and_the_rest_of_the_url_kept():
    url = "https://acct.blob.core.windows.net/c/f?sv=2022-11-02&se=2026-01-01&sp=r&sig=AbC%2Fd3f%3D"
    assert (
        redact_text(url) == "https://acct.blob.core.windows.net/c/f?sv=2022-11-02&se=2026-01-01&sp=r&sig=***"
    )


def test_the_shells_folder_words_are_kept_though_they_spell_pwd():
    # PWD and OLDPWD are the shell's folders, never a password: a log of the environment keeps them.
    assert redact_text("PWD=/home/ann OLDPWD=/tmp/a b") == "PWD=/home/ann OLDPWD=/tmp/a b"
    assert redact_text("cd ok; PWD = /home/ann") == "cd ok; PWD = /home/ann"


@pytest.mark.parametrize("name", ["PWD", "pwd", "Pwd", "OLDPWD", "OldPwd"])
def test_the_shells_folder_is_no_secret_name_in_any_case(name):
    assert not SECRET_NAME.search(name)
    assert redact_env({name: "/home/ann"}) == {name: "/home/ann"}


def test_an_option_that_says_secret_followed_by_another_option_hides_nothing():
    # --use-token takes no value here: the next word is an option, not its secret
    assert redact_text("aorta ab --use-token --json out.json") == "aorta ab --use-token --json out.json"
    assert redact_text("aorta ab --token t0ps3cret --json out.json") == "aorta ab --token *** --json out.json"


def test_a_known_secret_of_three_characters_is_hidden_and_one_of_two_is_not():
    # shorter than 3 characters it would hide every "1" or "ab" in a message
    assert redact_text("user abc, key abc", ["abc"]) == "user ***, key ***"
    assert redact_text("user ab, key ab", ["ab"]) == "user ab, key ab"


def test_a_libpq_password_with_an_escaped_quote_is_known_as_libpq_reads_it():
    # libpq: inside '...' a \' is a quote; a driver that quotes the password back quotes it unescaped
    text = r"host=db password='it\'s a b' user=ann"
    assert libpq_fields(text) == {"host": "db", "password": "it's a b", "user": "ann"}
    assert conninfo_secrets(text) == ["it's a b"]


def test_a_libpq_strings_client_key_password_is_a_secret_too():
    assert conninfo_secrets("host=db sslpassword=k3yk3y user=ann") == ["k3yk3y"]
    assert conninfo_secrets("host=db password=pw1 sslpassword=k3y") == ["pw1", "k3y"]


def test_an_option_given_its_secret_after_equals_leaves_the_next_word_shown():
    argv = ["aorta", "history", "--db-password=s3cret", "report.json"]
    assert redact_argv(argv) == ["aorta", "history", "--db-password=***", "report.json"]
    assert redact_argv(["aorta", "--db-password", "s3cret", "report.json"])[2:] == ["***", "report.json"]


@pytest.mark.parametrize(
    "name", ["GITHUBTOKEN", "HF_ACCESSTOKEN", "npmToken", "DBPASSWORD", "APPSECRET", "MYPASSWD"]
)
def test_a_name_whose_last_word_ends_in_a_secret_word_says_secret(name):
    assert SECRET_NAME.search(name)
    assert redact_env({name: "v4lue"}) == {name: "***"}


def test_an_unknown_settings_value_of_six_characters_is_a_secret_and_one_of_five_is_not():
    # a launcher's FOO_BAR=... whose meaning aorta does not know: held as a secret from 6 characters on
    assert launcher_secrets("FOO_BAR=abcdef python train.py") == ["abcdef"]
    assert launcher_secrets("FOO_BAR=abcde python train.py") == []


def test_the_history_refusal_hides_the_password_and_says_how_to_write_an_at(capsys):
    from aorta.cli import main

    code = main(["history", "--history", "postgresql://ann:p@ss@w0rd@127.0.0.1:1/h?password=hunter2", "show"])
    err = capsys.readouterr().err
    assert code == 2
    assert "w0rd" not in err and "hunter2" not in err
    assert "written %40" in err


@pytest.mark.slow  # a gate of two fresh runs (about 20 s)
def test_no_file_a_gate_run_leaves_holds_a_password_it_was_given(bench_dir, monkeypatch):
    """The password reaches the run twice: in an argument passed to every fresh run's command line, and in
    PGPASSWORD. Every file the run leaves (runs, logs, JSON, verdicts) is read for it."""
    from test_gate_plugin import run

    secret = "Pa55@w0rd-46"
    monkeypatch.setenv("PGPASSWORD", secret + "-env")
    r = run(bench_dir, "--aorta-runs=2", "-o", f"junit_suite_name=postgresql://ann:{secret}@db.example/h")
    assert r.ret == 0, r.stdout.str()
    logs = list(bench_dir.path.rglob("run*.log"))
    assert logs, "the gate left no run logs to read"
    leaked = [str(p) for p in bench_dir.path.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
    assert not leaked
