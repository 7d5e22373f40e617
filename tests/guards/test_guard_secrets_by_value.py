"""Secrets by value (issue 65, class 2; aorta/record/redact.py): every way a secret enters aorta (the
environment, a launcher's assignment, an option whose name says secret, a URL, a connection string) against
every way text leaves (a refusal, a log's command line, a command's stdout and stderr, a JSON document, an
exception), in this process. Each of these was printed in clear."""

from __future__ import annotations

import json
import sys

import pytest

from aorta import cli
from aorta.gate.baselines.settings_check import settings_refusal
from aorta.gate.runs.launcher_check import LauncherRefused, read_probe
from aorta.record import redact
from aorta.record.redact import (
    HIDDEN,
    SECRET_NAME,
    launcher_secrets,
    redact_argv,
    redact_launcher,
    redact_text,
    register_entered,
)

# (how it enters: argv, environment) -> the secret and the text that holds it as it is printed
ENTRIES = {
    "MYSQL_PWD in the environment": ([], {"MYSQL_PWD": "my5qlPw!"}, "my5qlPw!", "mysql -p my5qlPw!"),
    "AccountKey= in a connection string": (
        [],
        {"STORAGE": "DefaultEndpointsProtocol=https;AccountName=acc;AccountKey=QUJD+ZGVm==;EndpointSuffix=x"},
        "QUJD+ZGVm==",
        "could not reach acc with QUJD+ZGVm==",
    ),
    "--db-password X": (["--db-password", "Hunt3r2x"], {}, "Hunt3r2x", "login Hunt3r2x refused"),
    "--token=X": (["--token=tok3nvalue"], {}, "tok3nvalue", "bad tok3nvalue"),
    "a URL with a raw space": (
        ["--history", "postgresql://ann:pa ss word@db/h"],
        {},
        "pa ss word",
        "postgresql://ann:pa ss word@db/h: cannot connect",
    ),
    "a launcher's docker -e PGPASSWORD": (
        ["--a", "docker run -e PGPASSWORD=d0ckerpw img python"],
        {},
        "d0ckerpw",
        "docker run -e PGPASSWORD=d0ckerpw img python does not start a working Python",
    ),
    "a launcher's unknown setting": (
        ["--b", "MY_SERVICE_CRED=zz9plural python"],
        {},
        "zz9plural",
        "zz9plural was said back",
    ),
}


def leaves(text: str) -> dict[str, str]:
    """Each way text leaves aorta, given the registered secrets."""
    return {
        "a refusal": redact_text(f"aorta ab: error: {text}"),
        "a log's command line": " ".join(redact_argv(["python", "-c", text])),
        "a JSON document": redact_text(json.dumps({"said": text})),
        "an exception": redact_text(str(ValueError(text))),
    }


@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_every_secret_that_enters_is_hidden_wherever_text_leaves(entry):
    argv, env, secret, text = ENTRIES[entry]
    register_entered(argv, env)
    for where, shown in leaves(text).items():
        assert secret not in shown, (entry, where, shown)
        assert HIDDEN in shown


@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_every_secret_that_enters_a_command_is_hidden_on_its_stdout_and_stderr(entry, monkeypatch, capsys):
    argv, env, secret, text = ENTRIES[entry]
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    def run(args):
        print(text)
        print(text, file=sys.stderr)
        return 0

    monkeypatch.setitem(cli.COMMANDS, "list", (lambda parser: parser.add_argument("rest", nargs="*"), run))
    assert cli.main(["list", "--", *argv]) == 0
    out, err = capsys.readouterr()
    assert secret not in out and secret not in err, (out, err)


@pytest.mark.parametrize(
    "launcher",
    [
        "PGPASSWORD=ab\\ cd python",
        "PGPASSWORD='ab cd' python",
        'PGPASSWORD="ab\\"cd" python',
        "PGPASSWORD=ab\\'cd python",
    ],
)
def test_a_password_s_tail_after_an_escaped_space_or_quote_is_hidden(launcher):
    shown = redact_launcher(launcher)
    assert "cd" not in shown and shown.endswith(" python"), shown


def test_names_that_say_secret_and_names_that_do_not():
    for name in (
        "MYSQL_PWD",
        "AccountKey",
        "--db-password",
        "NCCL_PASSWORD_TEST",
        "HF_TOKEN",
        "SharedAccessKey",
    ):
        assert SECRET_NAME.search(name), name
    for name in ("PWD", "OLDPWD", "--aorta-kernel-pass-rounds", "NCCL_DEBUG", "keyboard", "HOME"):
        assert not SECRET_NAME.search(name), name


def test_a_known_setting_is_shown_unless_its_name_says_secret():
    assert launcher_secrets("NCCL_DEBUG=INFO HIP_VISIBLE_DEVICES=0,1 python") == []
    assert "t0psecret" in launcher_secrets("NCCL_PASSWORD_TEST=t0psecret python")


def test_the_settings_refusal_names_a_secret_setting_but_never_its_values():
    ref = {"env": {"NCCL_PASSWORD_TEST": "oldsecret1", "NCCL_ALGO": "Ring"}}
    cand = {"env": {"NCCL_PASSWORD_TEST": "newsecret2", "NCCL_ALGO": "Tree"}}
    said = settings_refusal(ref, cand, (), baseline="a", candidate="b", allow_option="--aorta-allow-env-diff")
    assert said is not None and "NCCL_PASSWORD_TEST" in said and "NCCL_ALGO Ring -> Tree" in said
    assert "oldsecret1" not in said and "newsecret2" not in said


def test_the_launcher_check_never_prints_a_second_copy_of_a_launcher_s_secret():
    text = "docker run -e PGPASSWORD=d0ckerpw img python"
    with pytest.raises(LauncherRefused) as refused:
        read_probe("--b", text, text.split(), 125, "docker: Error response from daemon: PGPASSWORD=d0ckerpw")
    assert "does not start a working Python" in str(refused.value)
    assert "d0ckerpw" not in str(refused.value)


def test_values_too_short_to_mean_anything_are_never_registered():
    redact.register("ab", "1")
    assert redact.registered() == frozenset()


# ------------------------------------------------------------------ pytest's own text (leftover 2)
SECRET_CONFTEST = """
def pytest_addoption(parser):
    parser.addoption("--db-password", default="")
"""
# Each test fails inside aorta code with its secret in the exception's message, in -l's locals and in its
# captured output: the ways pytest prints a traceback, a summary line and a test's output.
SECRET_TESTS = """
import os

from aorta.history.store import open_store
from aorta.options import parse_streams


def _fail_with(secret):
    print("connecting with", secret)
    parse_streams(secret)


def test_option(request):
    _fail_with(request.config.getoption("db_password"))


def test_environment():
    _fail_with(os.environ["PGPASSWORD"])


def test_url_in_the_environment():
    url = os.environ["AORTA_HISTORY"]
    print("history at", url)
    open_store(url).close()
"""
BY_WAY = {  # how a secret entered -> its value
    "--db-password X": "Hunt3rZz9w",
    "PGPASSWORD in the environment": "pgEnvS3cret",
    "a URL's password in the environment": "urlPa55wd",
}


def _runpytest(pytester, where: str, *args: str):
    """pytest with ARGS in this process (the fast tier) or in a child process (the slow tier, as users run it):
    the plugin redacts the same streams in both."""
    run = pytester.runpytest_subprocess if where == "child_process" else pytester.runpytest_inprocess
    return run(*args, "-p", "no:cacheprovider")


WHERE = pytest.mark.parametrize(
    "where", ["in_process", pytest.param("child_process", marks=pytest.mark.slow)]
)


@WHERE
def test_a_secret_given_any_way_never_reaches_pytest_s_output_or_its_junitxml(pytester, monkeypatch, where):
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(SECRET_CONFTEST)
    pytester.makepyfile(test_secrets=SECRET_TESTS)
    monkeypatch.setenv("PGPASSWORD", BY_WAY["PGPASSWORD in the environment"])
    monkeypatch.setenv("AORTA_HISTORY", f"postgresql://ann:{BY_WAY[next(reversed(BY_WAY))]}@db.invalid/h")
    result = _runpytest(
        pytester, where, "--db-password", BY_WAY["--db-password X"], "--junitxml", "j.xml", "-l", "-rA", "-v"
    )
    out, err = result.stdout.str(), result.stderr.str()
    junit = (pytester.path / "j.xml").read_text()
    assert result.ret == 1, out + err
    assert out.count(" FAILED") >= 3 and "***" in out and "***" in junit, out
    for way, secret in BY_WAY.items():
        for where, text in (("stdout", out), ("stderr", err), ("junitxml", junit)):
            assert secret not in text, (way, where)


def test_a_report_is_redacted_in_place_its_node_id_and_kinds_kept():
    from _pytest.reports import TestReport

    from aorta.record.redact_plugin import redact_report

    redact.register("s3cretValue")
    report = TestReport(
        "test_x.py::test_a[s3cretValue]",
        ("test_x.py", 1, "test_a"),
        {},
        "skipped",
        ("test_x.py", 1, "Skipped: s3cretValue unknown"),
        "call",
        [("Captured stdout call", "pw s3cretValue\n")],
        user_properties=[("pw", "s3cretValue")],
    )
    redact_report(report)
    assert report.longrepr == ("test_x.py", 1, "Skipped: *** unknown")
    assert report.sections == [("Captured stdout call", "pw ***\n")]
    assert report.user_properties == [("pw", "***")]
    assert report.nodeid == "test_x.py::test_a[s3cretValue]"  # pytest's bookkeeping keys on it


def test_the_terminal_reporter_s_stream_hides_every_registered_secret():
    import io

    from aorta.record import redact_plugin

    class Reporter:
        def __init__(self):
            self._tw = type("TW", (), {"_file": io.StringIO()})()

    reporter = Reporter()
    redact_plugin.pytest_plugin_registered(
        reporter, type("PM", (), {"get_name": lambda s, p: "terminalreporter"})()
    )
    redact.register("termS3cret")
    reporter._tw._file.write("rootdir: /x, args: --db-password termS3cret\n")
    assert reporter._tw._file.getvalue() == "rootdir: /x, args: --db-password ***\n"


@pytest.mark.parametrize(
    "args",
    [
        ["--aorta-rounds", "postgresql://ann:argPa55wd@db.invalid/h"],  # the option parser quotes the value
        ["postgresql://ann:argPa55wd@db.invalid/h"],  # "file or directory not found: ARG"
        ["--aorta-history", "postgresql://ann:argPa55wd@db.invalid/h"],  # the history refused at configure
        ["--db-password", "argPa55wd", "--aorta-streams", "argPa55wd"],
    ],
)
@WHERE
def test_pytest_s_own_refusals_never_quote_a_secret(pytester, args, where):
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(SECRET_CONFTEST)
    result = _runpytest(pytester, where, *args)
    said = result.stdout.str() + result.stderr.str()
    assert result.ret == 4, said
    assert "argPa55wd" not in said and "***" in said, said
    assert "Traceback" not in said
