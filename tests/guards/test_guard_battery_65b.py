"""Issue 65's second battery, kept back by a reviewer: the classes of test_guard_battery_65.py walked again with
cases it does not hold, through the one place every command passes (``aorta.cli.main``; pytest's options
through a real run in a child process, marked slow).

Every case asserts what the first battery asserts: the exit code documented, one line naming the option, the
path or the fault, no traceback, nothing saved lost or changed, no secret printed or written, no hang.

| class | what it holds |
| --- | --- |
| 1. outputs onto what the run reads | a conftest in a collected subfolder, a ``-p`` plugin, ``-c``/``setup.cfg``/``tox.ini`` ini files, links, ``..``, case, outputs onto each other, ``--benchmark-storage``, ``--basetemp``; report and sweep outputs onto their inputs |
| 2. no output is a pipe or a device | ``--junitxml``/``--log-file`` FIFO (hung), ``--benchmark-json`` FIFO or device node (replaced it), every command's outputs |
| 3. secrets by value | ``--db-password``, ``PGPASSWORD`` in parametrize ids and test names (junit XML, benchmark JSON), URL userinfo percent-encoded, libpq and ODBC strings with spaces, quotes, ``PWD=``, ``history show`` of names |
| 4. faults | a real full disk under ``--junitxml`` (a traceback), EIO reading, a damaged SQLite or JSON store, a reader of stdout gone from every printing command |
| 5. signals | SIGINT during a history write, SIGHUP/SIGINT during a baseline write |
"""

from __future__ import annotations

import errno
import io
import json
import os
import signal
import sqlite3
import stat
import sys
from pathlib import Path

import pytest

from aorta import cli
from aorta.history import store as history_store
from aorta.record import redact
from tests.guards import test_guard_battery_65 as battery_65
from tests.guards.test_guard_battery_65 import (
    OTHER_RUN,
    RUN,
    TRACE,
    _fault_after_the_run_row,
    _GoneReader,
    files,
    refused,
)

small_disk = battery_65.small_disk  # a fixture: a real 256 KiB tmpfs, filled

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux: mkfifo, mknod, /dev")


@pytest.fixture(autouse=True)
def _no_secrets_left():
    """Each case starts and ends with no registered secret (the redactor is the process's)."""
    redact.forget()
    yield
    redact.forget()


@pytest.fixture
def history(tmp_path):
    path = tmp_path / "h.db"
    assert cli.main(["history", "--history", str(path), "add", str(RUN)]) == 0
    return path


def _device(folder: Path) -> Path:
    """A character device node like /dev/null (1, 3), made where this runs as root; skipped elsewhere."""
    node = folder / "null-node"
    try:
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except (OSError, AttributeError):
        pytest.skip("mknod needs root")
    return node


# ------------------------------------------------------------------------------ 1. outputs onto what is read (aorta)
def _outputs_onto_inputs(tmp_path: Path, case: str) -> tuple[list[str], str]:
    run = tmp_path / "runs" / "a.json"
    run.parent.mkdir()
    run.write_bytes(RUN.read_bytes())
    if case == "report output holds its run":
        return ["report", "--run", str(run), "--label", "a", "--output", str(run.parent)], "--output"
    if case == "report output is its run through dot-dot":
        return [
            "report",
            "--run",
            str(run),
            "--label",
            "a",
            "--output",
            str(run.parent / ".." / "runs"),
        ], "--output"
    if case == "trace json onto the trace by a hard link":
        trace = tmp_path / "t.json"
        trace.write_bytes(TRACE.read_bytes())
        os.link(trace, tmp_path / "hard.json")
        return ["trace", "figures", str(trace), "--json", str(tmp_path / "hard.json")], "--json"
    if case == "verdict json onto the baseline by a symbolic link":
        (tmp_path / "link.json").symlink_to(run)
        return [
            "compare",
            str(run),
            str(OTHER_RUN),
            "--verdict-json",
            str(tmp_path / "link.json"),
        ], "--verdict-json"
    if case == "report --sweep output is the sweep":
        sweep = tmp_path / "sw"
        sweep.mkdir()
        (sweep / "sweep.json").write_text("{}\n")
        return ["report", "--sweep", str(sweep), "--output", str(sweep)], "--output"
    raise AssertionError(case)


@pytest.mark.parametrize(
    "case",
    [
        "report output holds its run",
        "report output is its run through dot-dot",
        "trace json onto the trace by a hard link",
        "verdict json onto the baseline by a symbolic link",
        "report --sweep output is the sweep",
    ],
)
def test_an_aorta_output_onto_its_own_input_is_refused(tmp_path, capsys, case):
    argv, option = _outputs_onto_inputs(tmp_path, case)
    refused(capsys, argv, 2, option, folder=tmp_path)


@pytest.mark.parametrize("command", ["page", "baseline"])
def test_a_history_output_onto_the_history_itself(history, capsys, command):
    argv = {"page": ["page", str(history)], "baseline": ["baseline", "cpu-torch2.13.0", str(history)]}[
        command
    ]
    refused(capsys, ["history", "--history", str(history), *argv], 2, str(history), folder=history.parent)


def test_an_output_onto_aortas_own_source_by_a_hard_link(tmp_path, capsys):
    import aorta.plugin

    link = tmp_path / "plugin.json"
    try:
        os.link(aorta.plugin.__file__, link)
    except OSError:
        pytest.skip("the checkout is on another filesystem")
    refused(
        capsys, ["trace", "figures", str(TRACE), "--json", str(link)], 2, "--json", "aorta", folder=tmp_path
    )


# ------------------------------------------------------------------------------ 2. no output is a pipe or a device
@linux_only
@pytest.mark.parametrize(
    "argv",
    [
        ["trace", "figures", str(TRACE), "--json", "{node}"],
        ["compare", str(RUN), str(OTHER_RUN), "--verdict-json", "{node}"],
        ["report", "--run", str(RUN), "--label", "a", "--output", "{node}"],
        ["history", "--history", "{history}", "page", "{node}"],
        ["history", "--history", "{history}", "baseline", "cpu-torch2.13.0", "{node}"],
    ],
    ids=["trace --json", "compare --verdict-json", "report --output", "history page", "history baseline"],
)
def test_a_device_named_as_any_output_is_refused_and_stays_a_device(history, capsys, argv):
    node = _device(history.parent)
    argv = [a.format(node=node, history=history) for a in argv]
    refused(capsys, argv, 2, str(node), "special file", folder=history.parent)
    assert stat.S_ISCHR(os.stat(node).st_mode)


@linux_only
def test_the_atomic_writer_never_renames_over_a_named_pipe(tmp_path):
    from aorta.record.atomic import write_text_atomic
    from aorta.record.storage_faults import WriteFailed

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(WriteFailed, match="named pipe"):
        write_text_atomic(fifo, "{}")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and os.listdir(tmp_path) == ["fifo"]


@linux_only
@pytest.mark.parametrize(
    "argv",
    [
        ["compare", "{fifo}", str(RUN)],
        ["noise", "{fifo}", str(RUN)],
        ["report", "--run", "{fifo}", "--label", "a", "--output", "{out}"],
        ["trace", "figures", "{fifo}"],
        ["history", "--history", "{fifo}", "show"],
    ],
    ids=["compare", "noise", "report --run", "trace figures", "history --history"],
)
def test_a_named_pipe_named_as_any_input_is_refused_at_once(tmp_path, capsys, argv):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    argv = [a.format(fifo=fifo, out=tmp_path / "rep") for a in argv]
    refused(capsys, argv, 2, str(fifo), "named pipe", folder=tmp_path)


# ------------------------------------------------------------------------------ 3. secrets by value (aorta)
@pytest.mark.parametrize(
    "value, secrets",
    [
        ("postgresql://ann:p%40ss%20w0rd9@db.invalid/h", ("p@ss w0rd9", "p%40ss%20w0rd9", "w0rd9")),
        ("host=db.invalid password = 'a b c9x' dbname=h", ("a b c9x", "c9x")),
        ("host=db.invalid user=ann password='it\\'s b9x' dbname=h", ("it's b9x", "s b9x")),
        ("Server=db;UID=ann;PWD=Qrs9xyz;", ("Qrs9xyz",)),
        ("Server=db;Uid=ann;Pwd='q r s9x';", ("q r s9x", "s9x")),
        ("postgresql://ann@db.invalid/h?password=qp%20w9x&sslmode=require", ("qp%20w9x", "qp w9x")),
    ],
    ids=[
        "url percent-encoded",
        "libpq spaced quoted",
        "libpq escaped quote",
        "odbc PWD",
        "odbc Pwd quoted",
        "url query",
    ],
)
def test_a_history_connection_secret_is_never_printed(capsys, value, secrets):
    capsys.readouterr()
    try:
        code = cli.main(["history", "--history", value, "show"])
    except SystemExit as exc:  # argparse's refusal of a value that is no history
        code = exc.code
    out, err = capsys.readouterr()
    assert code == 2 and "Traceback" not in err, (code, err)
    for secret in secrets:
        assert secret not in out + err, (secret, err)


def test_a_secret_named_env_value_quoted_back_as_a_path(capsys, monkeypatch):
    monkeypatch.setenv("SERVICE_CRED", "cr3dValue9")
    refused(capsys, ["history", "--history", "cr3dValue9", "show"], 2, "no history", secrets=("cr3dValue9",))


def test_a_secret_in_a_run_s_name_is_not_shown_by_history_show(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PGPASSWORD", "hunter9xyz")
    doc = json.loads(RUN.read_text())
    for bench in doc["benchmarks"]:
        bench["name"] += "[hunter9xyz]"
        bench["fullname"] += "[hunter9xyz]"
    run = tmp_path / "secret.json"
    run.write_text(json.dumps(doc))
    assert cli.main(["history", "--history", str(tmp_path / "h.db"), "add", str(run)]) == 0
    capsys.readouterr()
    assert cli.main(["history", "--history", str(tmp_path / "h.db"), "show"]) == 0
    out, err = capsys.readouterr()
    assert "hunter9xyz" not in out + err and "[***]" in out and "Traceback" not in err


# ------------------------------------------------------------------------------ 4. faults (aorta)
@pytest.mark.parametrize(
    "argv",
    [
        ["compare", str(RUN), "{bad}"],
        ["noise", "{bad}", str(RUN)],
        ["report", "--run", "{bad}", "--label", "a", "--output", "{out}"],
        ["history", "--history", "{history}", "add", "{bad}"],
    ],
    ids=["compare", "noise", "report", "history add"],
)
def test_an_io_error_reading_a_run_is_one_line_naming_it(
    history, tmp_path_factory, capsys, monkeypatch, argv
):
    bad = tmp_path_factory.mktemp("device") / "bad.json"  # outside the folder compared byte for byte
    bad.write_bytes(OTHER_RUN.read_bytes())
    real = io.open

    def faulty(file, *a, **k):
        if os.fspath(file) == str(bad):
            raise OSError(errno.EIO, os.strerror(errno.EIO), str(bad))
        return real(file, *a, **k)

    monkeypatch.setattr(io, "open", faulty)
    argv = [a.format(bad=bad, out=history.parent / "rep", history=history) for a in argv]
    refused(capsys, argv, 2, str(bad), folder=history.parent)


def _truncate_db(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])


@pytest.mark.parametrize(
    "action", [["show"], ["add", str(OTHER_RUN)], ["page", "{out}"], ["prune", "--keep", "1d"]]
)
def test_a_history_cut_short_is_refused_by_every_action_and_left_as_it_is(history, capsys, action):
    _truncate_db(history)
    argv = ["history", "--history", str(history), *[a.format(out=history.parent / "p.html") for a in action]]
    refused(capsys, argv, 2, str(history), folder=history.parent)


@pytest.mark.parametrize("text", ["[]", '{"benchmarks": 3}', '{"benchmarks": [{"name": 1}]}', "\ufeff{"])
def test_a_run_of_the_wrong_shape_is_refused_and_the_history_left(history, capsys, text):
    bad = history.parent / "bad.json"
    bad.write_text(text)
    refused(
        capsys, ["history", "--history", str(history), "add", str(bad)], 2, str(bad), folder=history.parent
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["compare", str(RUN), str(OTHER_RUN)],
        ["noise", str(RUN), str(OTHER_RUN)],
        ["history", "--history", "{history}", "add", str(OTHER_RUN)],
        ["report", "--run", str(RUN), "--label", "a", "--output", "{out}"],
    ],
    ids=["compare", "noise", "history add", "report"],
)
def test_a_reader_of_stdout_gone_ends_every_printing_command_quietly_with_141(
    history, capsys, monkeypatch, argv
):
    monkeypatch.setattr(cli, "quiet_broken_pipe", lambda: None)
    argv = [a.format(history=history, out=history.parent / "rep") for a in argv]
    capsys.readouterr()
    monkeypatch.setattr(sys, "stdout", _GoneReader())
    code = cli.main(argv)
    monkeypatch.undo()
    err = capsys.readouterr().err
    assert code == 141 and "Traceback" not in err and "Error" not in err, (code, err)


def test_a_sweep_on_a_real_full_disk_is_one_line_and_changes_nothing_there(small_disk, capsys):
    def only_added(
        before: dict, after: dict
    ) -> bool:  # its lock and manifest added (minor: left), nothing changed
        return all(after.get(k) == v for k, v in before.items())

    refused(capsys, ["sweep", "--grid", "NCCL_NTHREADS=256", "--output", str(small_disk / "sw"), "--", "pytest", "x"],
            3, "no space left on the device (ENOSPC)", folder=small_disk, changed=only_added)  # fmt: skip


# ------------------------------------------------------------------------------ 5. signals mid-write (aorta)
def test_ctrl_c_mid_way_through_a_history_write_keeps_nothing_of_the_run(history, capsys, monkeypatch):
    def interrupted():
        raise KeyboardInterrupt

    _fault_after_the_run_row(monkeypatch, interrupted)
    refused(capsys, ["history", "--history", str(history), "add", str(OTHER_RUN)], 130, "SIGINT",
            folder=history.parent)  # fmt: skip
    with history_store.open_store(str(history), create=False, write=False) as store:
        assert store.count()[0] == 1


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGINT])
def test_a_stop_signal_mid_way_through_a_baseline_write_leaves_the_old_one(
    stop_signals_at_default, history, capsys, monkeypatch, sig
):
    out = history.parent / "base.json"
    out.write_text("the old baseline\n")
    real = os.fsync

    def stopped(fd):
        os.kill(os.getpid(), sig)
        return real(fd)

    monkeypatch.setattr(os, "fsync", stopped)
    refused(capsys, ["history", "--history", str(history), "baseline", "cpu-torch2.13.0", str(out)], 128 + sig,
            signal.Signals(sig).name, folder=history.parent)  # fmt: skip


# ------------------------------------------------------------------------------ pytest's own options, real runs
SECRET_TEST = """
import pytest


@pytest.mark.parametrize("dsn", ["pgS3cretXY"])
def test_b(benchmark, dsn):
    benchmark(lambda: None)


def test_pgS3cretXY_named():
    pass


def test_fails(request):
    raise RuntimeError("could not connect with " + request.config.getoption("--db-password"))
"""


def _setup(pytester, case: str) -> None:
    """Each case's files in the pytester folder, beside ``test_a.py`` and the conftest."""
    p = pytester.path
    if case == "sub-conftest":
        (p / "sub").mkdir()
        (p / "sub" / "conftest.py").write_text("X = 1\n")
        (p / "sub" / "test_s.py").write_text("def test_s():\n    pass\n")
    elif case == "plugin":
        (p / "myplug.py").write_text("X = 1\n")
    elif case == "other-ini":
        (p / "other.ini").write_text("[pytest]\n")
    elif case == "setup-cfg":
        (p / "tox.ini").unlink()
        (p / "setup.cfg").write_text("[tool:pytest]\n")
    elif case == "tox-ini":
        pass  # pytester's makeini writes tox.ini
    elif case == "symlink":
        (p / "out.xml").symlink_to(p / "test_a.py")
    elif case == "hardlink":
        os.link(p / "test_a.py", p / "out.xml")
    elif case == "fifo":
        os.mkfifo(p / "ff")
    elif case == "device":
        _device(p)


@pytest.mark.slow
@linux_only
@pytest.mark.parametrize(
    "case, args, words",
    [
        ("sub-conftest", ["--junitxml", "sub/conftest.py"], ["--junitxml sub/conftest.py", "conftest"]),
        ("plugin", ["-p", "myplug", "--junitxml", "myplug.py"], ["--junitxml myplug.py", "plugin"]),
        (
            "other-ini",
            ["-c", "other.ini", "--junitxml", "other.ini"],
            ["--junitxml other.ini", "configuration"],
        ),
        (
            "other-ini",
            ["--rootdir", ".", "-c", "other.ini", "--log-file", "other.ini"],
            ["--log-file other.ini"],
        ),
        ("setup-cfg", ["--benchmark-json", "setup.cfg"], ["--benchmark-json setup.cfg", "configuration"]),
        ("tox-ini", ["--log-file", "tox.ini"], ["--log-file tox.ini", "configuration"]),
        ("symlink", ["--junitxml", "out.xml"], ["--junitxml out.xml", "test_a.py"]),
        ("hardlink", ["--junitxml", "out.xml"], ["--junitxml out.xml", "test_a.py"]),
        ("none", ["--junitxml", "sub/../conftest.py"], ["--junitxml sub/../conftest.py", "conftest"]),
        ("none", ["--aorta-verdict-json", "v.json", "--junitxml", "v.json"], ["v.json", "two outputs"]),
        (
            "none",
            ["--benchmark-save", "x", "--benchmark-storage", "test_a.py"],
            ["--benchmark-storage", "a file"],
        ),
        ("sub-conftest", ["--basetemp", "sub"], ["--basetemp sub", "holds"]),
        ("fifo", ["--junitxml", "ff"], ["--junitxml ff", "named pipe"]),
        ("fifo", ["--log-file", "ff"], ["--log-file ff", "named pipe"]),
        ("fifo", ["--benchmark-json", "ff"], ["--benchmark-json ff", "named pipe"]),
        ("device", ["--benchmark-json", "null-node"], ["--benchmark-json null-node", "special file"]),
    ],
    ids=[
        "conftest of a collected subfolder",
        "-p plugin module",
        "-c ini",
        "--rootdir and -c ini under --log-file",
        "setup.cfg",
        "tox.ini",
        "symlink to a test file",
        "hard link to a test file",
        "dot-dot to the conftest",
        "two outputs on one file",
        "--benchmark-storage onto a test file",
        "--basetemp holding the tests",
        "--junitxml FIFO (hung)",
        "--log-file FIFO (hung)",
        "--benchmark-json FIFO (replaced)",
        "--benchmark-json device node (replaced)",
    ],
)
def test_a_pytest_output_onto_what_the_run_reads_or_a_node_is_refused_before_any_work(
    pytester, case, args, words
):
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(
        "def pytest_addoption(parser):\n    parser.addoption('--db-password', default='')\n"
    )
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    _setup(pytester, case)
    before = files(pytester.path)
    result = pytester.runpytest_subprocess(*args, "-p", "no:cacheprovider", timeout=90)
    said = result.stdout.str() + result.stderr.str()
    assert result.ret == 4, said
    assert "Traceback" not in said, said
    for word in words:
        assert word in said, (word, said)
    after = {k: v for k, v in files(pytester.path).items() if k not in ("stdout", "stderr")}
    assert after == before, said
    if case == "device":
        assert stat.S_ISCHR(os.stat(pytester.path / "null-node").st_mode)


@pytest.mark.slow
def test_a_path_differing_only_in_case_is_another_file_and_the_conftest_is_kept(pytester):
    pytester.makeini("[pytest]\n")
    conftest = pytester.makeconftest("X = 1\n")
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    result = pytester.runpytest_subprocess("--junitxml", "CONFTEST.PY", "-p", "no:cacheprovider", timeout=90)
    if os.path.samefile(conftest, pytester.path / "CONFTEST.PY"):  # a filesystem that folds case
        assert result.ret == 4
    else:
        assert result.ret == 0 and conftest.read_text().strip() == "X = 1"


@pytest.mark.slow
def test_a_secret_in_a_parametrize_id_or_test_name_reaches_no_output(pytester, monkeypatch):
    monkeypatch.setenv("PGPASSWORD", "pgS3cretXY")
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(
        "def pytest_addoption(parser):\n    parser.addoption('--db-password', default='')\n"
    )
    pytester.makepyfile(test_sec=SECRET_TEST)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-rA", "-v", "--junitxml", "j.xml", "--benchmark-json", "b.json",
        "--db-password", "Qz9Secret77", timeout=120,
    )  # fmt: skip
    said = result.stdout.str() + result.stderr.str()
    assert result.ret == 1, said
    written = (pytester.path / "j.xml").read_text() + (pytester.path / "b.json").read_text()
    assert "test_b" in written and "***" in written
    for secret in ("pgS3cretXY", "Qz9Secret77"):
        assert secret not in said + written, secret


@pytest.mark.slow
def test_junitxml_on_a_real_full_disk_is_one_line_and_exit_3(pytester, small_disk):
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    with open(small_disk / "last", "wb", buffering=0) as fh:  # the last KiB taken too: the XML cannot fit
        try:
            while True:
                fh.write(b"x" * 512)
        except OSError:
            pass
    result = pytester.runpytest_subprocess(
        "--junitxml", str(small_disk / "j.xml"), "-p", "no:cacheprovider", timeout=90
    )
    said = result.stdout.str() + result.stderr.str()
    assert result.ret == 3, said
    assert "Traceback" not in said and "1 passed" in said, said
    assert f"--junitxml {small_disk / 'j.xml'}" in said and "no space left on the device (ENOSPC)" in said, (
        said
    )


def test_a_damaged_history_table_never_changes_on_add(history, capsys):
    conn = sqlite3.connect(history)
    conn.execute("DROP TABLE figures")
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    refused(
        capsys,
        ["history", "--history", str(history), "add", str(OTHER_RUN)],
        2,
        str(history),
        folder=history.parent,
    )


def _cases(test) -> int:
    n = 1
    for mark in getattr(test, "pytestmark", []):
        if mark.name == "parametrize":
            n *= len(mark.args[1])
    return n


def test_the_battery_holds_at_least_40_cases():
    tests = [f for name, f in globals().items() if name.startswith("test_") and callable(f)]
    assert sum(_cases(t) for t in tests if t is not test_the_battery_holds_at_least_40_cases) >= 40
