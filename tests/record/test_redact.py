"""No password is printed or written (issue 46, class 3): database URLs, command lines in logs and environments
in records pass through one redactor, whatever characters the password holds."""

from __future__ import annotations

import pytest

from aorta.record.redact import redact_argv, redact_env, redact_text, redact_url, url_password


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
