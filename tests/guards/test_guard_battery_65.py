"""Issue 65's battery: bad inputs, faults and signals across the classes, each through the one place every command
passes (``aorta.cli.main``; pytest's options through a real run). Every case asserts the same five things: one
clear line naming the option, the path or the fault; the exit code documented (README "Exit codes",
docs/history.md, docs/traces.md); no traceback; nothing saved lost or changed (every file byte for byte, no
temporary file left); no secret printed.

The classes: outputs onto what the run reads; inputs that are no file; damaged stores; faults of the storage
(full disk, quota, read-only, I/O error, too large: faked where the write happens); stop signals mid-write;
a reader of stdout gone; secrets by every way they enter (environment, launcher words, URL, conninfo, option
names).
"""

from __future__ import annotations

import errno
import json
import os
import signal
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from aorta import cli
from aorta.history import store as history_store

DATA = Path(__file__).resolve().parents[1] / "data" / "report"
RUN, OTHER_RUN = DATA / "hwq_end_only.json", DATA / "hwq_per_round.json"
TRACE = DATA / "traces" / "rank0.pt.trace.json"
ROOT = Path(__file__).resolve().parents[2]
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux: mkfifo, /dev, /proc")


# ------------------------------------------------------------------------------ the five checks
def files(folder: Path) -> dict[str, bytes]:
    """Every regular file under ``folder``, byte for byte (a FIFO is named, never read)."""
    out: dict[str, bytes] = {}
    for path in sorted(folder.rglob("*")):
        if path.is_fifo():
            out[str(path.relative_to(folder))] = b"<fifo>"
        elif path.is_file():
            out[str(path.relative_to(folder))] = path.read_bytes()
    return out


def refused(
    capsys,
    argv: list[str],
    code: int,
    *words: str,
    folder: Path | None = None,
    secrets: tuple[str, ...] = (),
    changed: Callable[[dict, dict], bool] | None = None,
) -> str:
    """``aorta ARGV`` refused or failed as documented: exit ``code``, one line on stderr holding each of
    ``words``, no traceback, ``folder`` byte for byte as before (or as ``changed`` allows), no secret printed."""
    before = files(folder) if folder else {}
    capsys.readouterr()
    try:
        got = cli.main(argv)
    except SystemExit as exc:  # argparse's refusal of a value: its usage, then one line
        got = exc.code
    out, err = capsys.readouterr()
    assert got == code, (argv, got, out, err)
    said = [line for line in err.splitlines() if line and not line.startswith(("usage:", " "))]
    assert len(said) == 1 and err.endswith("\n"), err
    for word in words:
        assert word in said[0], (word, err)
    assert "Traceback" not in out + err
    for secret in secrets:
        assert secret not in out + err, (secret, out, err)
    if folder is not None:
        after = files(folder)
        assert after == before or (changed is not None and changed(before, after)), sorted(
            set(before) ^ set(after)
        )
        assert not [p for p in after if p.endswith(".tmp") or ".aorta-write-check." in p], after
    return err


@pytest.fixture
def history(tmp_path) -> Path:
    path = tmp_path / "h.db"
    assert cli.main(["history", "--history", str(path), "add", str(RUN)]) == 0
    return path


@pytest.fixture
def fifo(tmp_path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


def storage_fault(monkeypatch, number: int, at: str = "fsync") -> None:
    """The storage answering ``number`` where aorta writes: at ``fsync`` (a full disk, a quota, an I/O error,
    a file too large show there first) or at ``open`` of a new file (a read-only mount)."""

    def fault(*args, **kw):
        raise OSError(number, os.strerror(number))

    if at == "fsync":
        monkeypatch.setattr(os, "fsync", fault)
    else:
        real_open = os.open

        def open_(path, flags, *args, **kw):
            if flags & os.O_CREAT:
                raise OSError(number, os.strerror(number), os.fspath(path))
            return real_open(path, flags, *args, **kw)

        monkeypatch.setattr(os, "open", open_)


# ------------------------------------------------------------------------------ 1. outputs onto what the run reads
def test_a_history_page_onto_the_history_itself(history, capsys):
    refused(capsys, ["history", "--history", str(history), "page", str(history)], 2, "OUT.html", str(history),
            "the history database", folder=history.parent)  # fmt: skip


def test_trace_figures_json_onto_its_own_input(tmp_path, capsys):
    run = tmp_path / "run.json"
    run.write_bytes(RUN.read_bytes())
    refused(
        capsys, ["trace", "figures", str(run), "--json", str(run)], 2, "--json", str(run), folder=tmp_path
    )


def test_a_baseline_written_over_a_file_of_aorta_itself(history, capsys):
    target = ROOT / "aorta" / "exit_codes.py"
    before = target.read_bytes()
    refused(capsys, ["history", "--history", str(history), "baseline", "cpu-torch2.13.0", str(target)], 2,
            "OUT.json", "a file of the aorta package")  # fmt: skip
    assert target.read_bytes() == before


def test_a_report_folder_where_a_file_is(tmp_path, capsys):
    (tmp_path / "report").write_text("kept\n")
    refused(capsys, ["report", "--run", str(RUN), "--label", "a", "--output", str(tmp_path / "report")], 2, "--output",
            str(tmp_path / "report"), folder=tmp_path)  # fmt: skip


# ------------------------------------------------------------------------------ 2. inputs that are no file
@linux_only
def test_a_history_that_is_a_named_pipe(fifo, capsys):
    refused(
        capsys, ["history", "--history", str(fifo), "add", str(RUN)], 2, "--history", str(fifo), "named pipe"
    )


@linux_only
def test_a_history_that_is_a_device(capsys):
    refused(capsys, ["history", "--history", "/dev/zero", "show"], 2, "/dev/zero", "not a file")


def test_a_history_that_is_a_folder(tmp_path, capsys):
    refused(
        capsys, ["history", "--history", str(tmp_path), "show"], 2, str(tmp_path), "a folder", folder=tmp_path
    )


@linux_only
def test_a_run_file_that_is_a_named_pipe(history, fifo, capsys):
    refused(capsys, ["history", "--history", str(history), "add", str(fifo)], 2, str(fifo), "named pipe",
            folder=history.parent)  # fmt: skip


@linux_only
def test_a_trace_that_is_a_named_pipe(fifo, capsys):
    refused(capsys, ["trace", "figures", str(fifo)], 2, str(fifo), "named pipe", folder=fifo.parent)


@linux_only
def test_an_output_that_is_a_named_pipe(history, fifo, capsys):
    refused(capsys, ["history", "--history", str(history), "page", str(fifo)], 2, str(fifo), "named pipe",
            folder=history.parent)  # fmt: skip


# ------------------------------------------------------------------------------ 3. damaged stores
def _cut(path: Path, source: Path = RUN) -> Path:
    path.write_bytes(source.read_bytes()[: len(source.read_bytes()) // 2])
    return path


def test_a_run_file_cut_short_is_refused_and_the_history_left(history, capsys):
    cut = _cut(history.parent / "cut.json")
    refused(capsys, ["history", "--history", str(history), "add", str(OTHER_RUN), str(cut)], 2, str(cut),
            "nothing added", folder=history.parent)  # fmt: skip


def test_a_verdict_file_cut_short_is_refused_and_the_history_left(history, capsys):
    cut = _cut(history.parent / "verdict.json")
    refused(capsys, ["history", "--history", str(history), "add", str(OTHER_RUN), "--verdicts", str(cut)], 2,
            "--verdicts", str(cut), folder=history.parent)  # fmt: skip


def _sql(path: Path, statement: str) -> None:
    """``statement`` run on the history by another program, committed and closed, its log folded in."""
    conn = sqlite3.connect(path)
    conn.execute(statement)
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def test_a_history_whose_json_side_is_damaged_draws_no_page(history, capsys):
    _sql(history, "UPDATE figures SET samples = '{'")
    refused(capsys, ["history", "--history", str(history), "page", str(history.parent / "p.html")], 2,
            str(history), "damaged history", "figures table", folder=history.parent)  # fmt: skip


def test_a_history_that_is_another_program_s_database(tmp_path, capsys):
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t (x)")
    conn.close()
    refused(capsys, ["history", "--history", str(other), "add", str(RUN)], 2, str(other), "not an aorta history",
            folder=tmp_path)  # fmt: skip


def test_a_history_of_a_newer_schema(history, capsys):
    _sql(history, "UPDATE aorta_schema SET version = 99")
    refused(capsys, ["history", "--history", str(history), "add", str(OTHER_RUN)], 2, str(history), "newer",
            folder=history.parent)  # fmt: skip


def test_a_history_that_is_no_database_at_all(tmp_path, capsys):
    junk = tmp_path / "h.db"
    junk.write_bytes(b"not a database, not empty either\n" * 64)
    refused(capsys, ["history", "--history", str(junk), "show"], 2, str(junk), folder=tmp_path)


def test_a_baseline_cut_short_is_refused_by_compare(tmp_path, capsys):
    cut = _cut(tmp_path / "base.json")
    refused(capsys, ["compare", str(cut), str(RUN)], 2, str(cut), folder=tmp_path)


def test_a_run_cut_short_is_refused_by_report(tmp_path, capsys):
    cut = _cut(tmp_path / "run.json")
    refused(
        capsys,
        ["report", "--run", str(cut), "--label", "a", "--output", str(tmp_path / "rep")],
        2,
        str(cut),
        folder=tmp_path,
    )


def test_a_run_cut_short_is_refused_by_noise(tmp_path, capsys):
    cut = _cut(tmp_path / "runs.json")
    refused(capsys, ["noise", str(cut)], 2, str(cut), folder=tmp_path)


# ------------------------------------------------------------------------------ 4. faults of the storage
FAULTS = {
    errno.ENOSPC: "no space left on the device (ENOSPC)",
    errno.EDQUOT: "over the disk quota (EDQUOT)",
    errno.EIO: "an I/O error of the device (EIO)",
    errno.EFBIG: "a file larger than the filesystem allows (EFBIG)",
}


@pytest.mark.parametrize("number", sorted(FAULTS))
def test_a_baseline_written_on_a_faulty_disk_leaves_the_old_one(history, capsys, monkeypatch, number):
    out = history.parent / "base.json"
    out.write_text("the old baseline\n")
    storage_fault(monkeypatch, number)
    refused(capsys, ["history", "--history", str(history), "baseline", "cpu-torch2.13.0", str(out)], 3, str(out),
            FAULTS[number], folder=history.parent)  # fmt: skip


@pytest.mark.parametrize("number", [errno.ENOSPC, errno.EIO])
def test_trace_figures_json_on_a_faulty_disk(tmp_path, capsys, monkeypatch, number):
    storage_fault(monkeypatch, number)
    refused(capsys, ["trace", "figures", str(TRACE), "--json", str(tmp_path / "f.json")], 3,
            str(tmp_path / "f.json"), FAULTS[number], folder=tmp_path)  # fmt: skip


@pytest.fixture
def small_disk(tmp_path):
    """A real filesystem of 256 KiB (tmpfs, mounted where this runs as root with the right to mount), filled
    to its last few KiB: writes there fail with ENOSPC as on a full disk."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0 or os.system(f"mount -t tmpfs -o size=256k tmpfs {mount} 2>/dev/null") != 0:
        pytest.skip("mounting a small tmpfs needs root and the right to mount")
    try:
        with open(mount / "fill", "wb", buffering=0) as fh:
            try:
                while True:
                    fh.write(b"x" * 4096)
                    fh.flush()
            except OSError:
                pass
        os.truncate(mount / "fill", os.path.getsize(mount / "fill") - 8192)
        yield mount
    finally:
        os.system(f"umount {mount}")


def test_a_report_on_a_real_full_disk(small_disk, capsys):
    refused(capsys, ["report", "--run", str(RUN), "--label", "a", "--output", str(small_disk / "rep")], 3,
            "--output", FAULTS[errno.ENOSPC], folder=small_disk)  # fmt: skip


def test_a_history_created_on_a_real_full_disk_leaves_no_file(small_disk, capsys):
    refused(capsys, ["history", "--history", str(small_disk / "h.db"), "add", str(RUN)], 3, str(small_disk / "h.db"),
            FAULTS[errno.ENOSPC], folder=small_disk)  # fmt: skip


def test_a_history_on_a_real_read_only_mount_is_read_never_written(small_disk, capsys):
    (small_disk / "fill").unlink()
    assert cli.main(["history", "--history", str(small_disk / "h.db"), "add", str(RUN)]) == 0
    assert os.system(f"mount -o remount,ro {small_disk}") == 0
    refused(capsys, ["history", "--history", str(small_disk / "h.db"), "add", str(OTHER_RUN)], 2,
            str(small_disk / "h.db"), "read-only", folder=small_disk)  # fmt: skip


def test_a_verdict_file_on_a_full_disk(tmp_path, capsys, monkeypatch):
    storage_fault(monkeypatch, errno.EDQUOT)
    verdict = tmp_path / "v.json"
    refused(capsys, ["compare", str(RUN), str(RUN), "--verdict-json", str(verdict)], 3, str(verdict),
            FAULTS[errno.EDQUOT], folder=tmp_path)  # fmt: skip


@pytest.mark.parametrize("command", ["page", "baseline"])
def test_an_output_on_a_read_only_filesystem(history, capsys, monkeypatch, command):
    out = history.parent / "ro" / "out"
    out.parent.mkdir()
    storage_fault(monkeypatch, errno.EROFS, at="open")
    argv = {"page": ["page", str(out)], "baseline": ["baseline", "cpu-torch2.13.0", str(out)]}[command]
    refused(
        capsys, ["history", "--history", str(history), *argv], 2, str(out), "read-only", folder=history.parent
    )


def _fault_after_the_run_row(monkeypatch, fault: Callable[[], None]) -> None:
    """``fault()`` inside a run's transaction, once its row is written and before its figures are."""
    real = history_store.HistoryStore.execute

    def execute(self, text, params=()):
        cur = real(self, text, params)
        if text.startswith("INSERT INTO runs"):
            fault()
        return cur

    monkeypatch.setattr(history_store.HistoryStore, "execute", execute)


def test_a_history_on_a_full_disk_keeps_what_it_had(history, capsys, monkeypatch):
    def full():
        raise sqlite3.OperationalError("database or disk is full")

    _fault_after_the_run_row(monkeypatch, full)
    refused(capsys, ["history", "--history", str(history), "add", str(OTHER_RUN)], 3, str(history),
            "could not be written", folder=history.parent)  # fmt: skip


# ------------------------------------------------------------------------------ 5. stop signals mid-write
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_mid_way_through_a_history_write_keeps_nothing_of_the_run(
    stop_signals_at_default, history, capsys, monkeypatch, sig
):
    _fault_after_the_run_row(monkeypatch, lambda: os.kill(os.getpid(), sig))  # nothing of the run may stay
    refused(capsys, ["history", "--history", str(history), "add", str(OTHER_RUN)], 128 + sig,
            signal.Signals(sig).name, folder=history.parent)  # fmt: skip
    with history_store.open_store(str(history), create=False, write=False) as store:
        assert store.count()[0] == 1


def test_a_sigterm_mid_way_through_a_baseline_write_leaves_the_old_one(
    stop_signals_at_default, history, capsys, monkeypatch
):
    out = history.parent / "base.json"
    out.write_text("the old baseline\n")
    real = os.fsync

    def stopped(fd):
        os.kill(os.getpid(), signal.SIGTERM)
        return real(fd)

    monkeypatch.setattr(os, "fsync", stopped)
    refused(capsys, ["history", "--history", str(history), "baseline", "cpu-torch2.13.0", str(out)], 143, "SIGTERM",
            folder=history.parent)  # fmt: skip


# ------------------------------------------------------------------------------ 6. a reader of stdout gone
class _GoneReader:
    def write(self, text: str) -> int:
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")

    def flush(self) -> None:
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")


@pytest.mark.parametrize("argv", [["list"], ["stack"], ["history", "show"]])
def test_a_reader_gone_ends_the_command_quietly_with_141(history, capsys, monkeypatch, argv):
    if argv[0] == "history":
        argv = ["history", "--history", str(history), "show"]
    monkeypatch.setattr(cli, "quiet_broken_pipe", lambda: None)
    before = files(history.parent)
    capsys.readouterr()
    monkeypatch.setattr(sys, "stdout", _GoneReader())
    code = cli.main(argv)
    monkeypatch.undo()
    err = capsys.readouterr().err
    assert code == 141 and err == "", err
    assert files(history.parent) == before


# ------------------------------------------------------------------------------ 7. secrets, every way they enter
def test_a_url_password_in_the_history_option(capsys):
    refused(capsys, ["history", "--history", "postgresql://ann:urlS3cret9@db.invalid/h", "show"], 2,
            "postgresql://ann:***@db.invalid/h", secrets=("urlS3cret9",))  # fmt: skip


def test_a_url_password_holding_at_colon_and_slash(capsys):
    refused(capsys, ["history", "--history", "postgresql://ann:p@ss:w/rd9x@db.invalid/h", "show"], 2, "***",
            secrets=("p@ss:w/rd9x", "ss:w/rd9x", "w/rd9x", "rd9x@db"))  # fmt: skip


def test_a_conninfo_password(capsys):
    refused(capsys, ["history", "--history", "host=db.invalid password=c0nnS3cret dbname=h", "show"], 2,
            "password=***", secrets=("c0nnS3cret",))  # fmt: skip


def test_a_url_password_in_the_environment(capsys, monkeypatch):
    monkeypatch.setenv("AORTA_HISTORY", "postgresql://ann:envS3cret7@db.invalid/h")
    refused(capsys, ["history", "show"], 2, "***", secrets=("envS3cret7",))


def test_an_environment_secret_quoted_back_as_a_path(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("PGPASSWORD", "pgQuoted88")
    refused(capsys, ["history", "--history", "pgQuoted88", "show"], 2, "no history here",
            secrets=("pgQuoted88",))  # fmt: skip


def test_a_launcher_s_secret_in_its_words(capsys, tmp_path):
    refused(capsys, ["ab", "--a", "PGPASSWORD=launchS3c9 /nonexistent/python", "--b", "", "--out",
                     str(tmp_path / "ab"), "--", "test_x.py"], 2, "--a", secrets=("launchS3c9",))  # fmt: skip
    assert not (tmp_path / "ab").exists()


def test_a_secret_option_in_the_command_of_an_ab(capsys, tmp_path):
    refused(capsys, ["ab", "--a", "", "--b", "", "--out", str(tmp_path / "ab"), "--", "test_x.py",
                     "--aorta-compare", "base", "--db-password", "0ptS3cret"], 2, "--aorta-compare",
            secrets=("0ptS3cret",))  # fmt: skip


def test_a_secret_setting_in_a_sweep_grid(capsys, tmp_path):
    (tmp_path / "out").write_text("a file where the sweep's folder goes\n")
    refused(capsys, ["sweep", "--grid", "HF_TOKEN=gr1dS3cret,gr2dS3cret", "--output", str(tmp_path / "out"), "--",
                     "pytest", "x"], 2, "--output", folder=tmp_path, secrets=("gr1dS3cret", "gr2dS3cret"))  # fmt: skip


# ------------------------------------------------------------------------------ 8. pytest's own options, real runs
def _pytest_run(pytester, *args: str):
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(
        "def pytest_addoption(parser):\n    parser.addoption('--db-password', default='')\n"
    )
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    before = files(pytester.path)
    result = pytester.runpytest_subprocess(*args, "-p", "no:cacheprovider")
    said = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in said, said
    after = {k: v for k, v in files(pytester.path).items() if k not in ("stdout", "stderr")}  # pytester's own
    assert after == before, said
    return result, said


@pytest.mark.slow
@pytest.mark.parametrize(
    "args, words",
    [
        (["--benchmark-json", "conftest.py"], ["--benchmark-json conftest.py", "conftest"]),
        (["--benchmark-autosave", "--benchmark-storage", "test_a.py"], ["--benchmark-storage", "test_a.py"]),
        (["--log-file", "conftest.py"], ["--log-file conftest.py"]),
        (["--log-file", "test_a.py"], ["--log-file test_a.py", "a test file pytest will collect"]),
        (["-o", "log_file=test_a.py"], ["--log-file test_a.py", "a test file pytest will collect"]),
        (["--aorta-history", "pipe"], ["--aorta-history", "pipe", "named pipe"]),
        (["--db-password", "pyS3cret9", "--aorta-streams", "pyS3cret9"], ["--aorta-streams"]),
    ],
)
def test_a_pytest_run_refuses_before_any_work(pytester, args, words):
    if "pipe" in args:
        os.mkfifo(pytester.path / "pipe")
    result, said = _pytest_run(pytester, *args)
    assert result.ret == 4, said
    for word in words:
        assert word in said, (word, said)
    assert "pyS3cret9" not in said


def test_the_battery_holds_at_least_25_cases():
    cases = [n for n, f in globals().items() if n.startswith("test_") and callable(f) and n != __name__]
    assert len(cases) >= 25, cases
    assert json  # the module reads JSON files only through aorta
