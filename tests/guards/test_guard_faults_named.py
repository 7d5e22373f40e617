"""Every writer and reader names its faults (issue 65, class 3), in this process: each storage fault (ENOSPC,
EDQUOT, EROFS, EIO, EFBIG) and a damaged store (SQLite, JSON) from every ``aorta`` command is one line naming the
path and the fault with its exit code (aorta/cli.py: with_faults_said); a reader of stdout gone is quiet, 141;
a damaged history is refused and left byte for byte as it was; a named pipe or a device as a history or a
baseline is refused before it is opened (pytest hung on one with no output); the writes outside the one atomic
writer (a run's log, a lock) say their path."""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import sys
from pathlib import Path

import pytest

from aorta import cli
from aorta.gate.runs import fresh_runs
from aorta.history.store import HistoryError, open_store
from aorta.processes import lock
from aorta.record import RecordError
from aorta.record.load import read_json_file
from aorta.record.output_arguments import check_option_outputs
from aorta.record.output_paths import OutputPathError
from aorta.record.storage_faults import FAULTS, WriteFailed, faults_named, said_fault, write_failed

RUN = Path(__file__).resolve().parents[1] / "data" / "report" / "hwq_end_only.json"
STORAGE = [errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EFBIG]
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/dev/full, mkfifo")


def faults():
    """Every fault a writer or reader may meet, with the code and the words its line must hold."""
    for number in STORAGE:
        yield (
            OSError(number, os.strerror(number), "/data/out.json"),
            3,
            ["/data/out.json", errno.errorcode[number]],
        )
    yield WriteFailed(errno.ENOSPC, "no space", "/data/b.json"), 3, ["/data/b.json", "no space"]
    yield json.JSONDecodeError("Expecting value", "{", 1), 2, ["damaged", "not JSON"]
    yield sqlite3.DatabaseError("database disk image is malformed"), 2, ["damaged SQLite", "malformed"]
    yield sqlite3.OperationalError("database or disk is full"), 3, ["ENOSPC"]
    yield sqlite3.OperationalError("disk I/O error"), 3, ["EIO"]


def test_every_storage_fault_is_in_the_table_with_what_to_do():
    assert set(STORAGE) <= set(FAULTS)


@pytest.mark.parametrize("command", sorted(cli.COMMANDS))
def test_every_command_says_every_fault_in_one_line_with_its_code(command, monkeypatch, capsys):
    for exc, code, words in faults():

        def run(args, exc=exc):
            raise exc

        monkeypatch.setitem(cli.COMMANDS, command, (lambda parser: None, run))
        if command == "torchrun":
            monkeypatch.setattr(cli, "run_torchrun", run)
        assert cli.main([command]) == code, exc
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(f"aorta {command}: error: "), err
        assert all(w in err for w in words), (err, words)
        assert "Traceback" not in err


def test_a_programming_error_keeps_its_traceback(monkeypatch):
    def run(args):
        raise ValueError("a bug")

    monkeypatch.setitem(cli.COMMANDS, "list", (lambda parser: None, run))
    with pytest.raises(ValueError, match="a bug"):
        cli.main(["list"])


def test_a_reader_of_stdout_gone_ends_the_command_quietly_with_141(monkeypatch, capsys):
    def run(args):
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")

    quieted: list[bool] = []
    monkeypatch.setattr(cli, "quiet_broken_pipe", lambda: quieted.append(True))
    monkeypatch.setitem(cli.COMMANDS, "history", (lambda parser: None, run))
    assert cli.main(["history"]) == 128 + 13
    assert quieted == [True] and capsys.readouterr().err == ""


def test_said_fault_leaves_other_errors_to_their_traceback():
    assert said_fault(OSError(errno.ENOENT, "No such file", "x")) is None
    assert said_fault(ValueError("a bug")) is None
    assert said_fault(sqlite3.OperationalError("no such table: runs")) is None


def test_a_fault_of_a_rename_names_both_its_files_and_one_of_a_write_its_file_alone():
    # os.replace(a.tmp, a.json) on a full disk: the OSError holds both names (filename2), and the line says both
    renamed = OSError(errno.ENOSPC, "No space left on device", "a.tmp", None, "a.json")
    assert said_fault(renamed) == (
        3,
        "a.tmp -> a.json: no space left on the device (ENOSPC): free space there and run again",
    )
    written = OSError(errno.EROFS, "Read-only file system", "a.json")
    assert said_fault(written) == (
        3,
        "a.json: a read-only filesystem (EROFS): give a place on a writable filesystem",
    )
    unnamed = OSError(errno.EIO, "Input/output error")
    assert said_fault(unnamed)[1].startswith("a file: an I/O error of the device (EIO)")  # type: ignore[index]


def _damaged_history(tmp_path: Path) -> Path:
    path = tmp_path / "h.db"
    assert cli.main(["history", "--history", str(path), "add", str(RUN)]) == 0
    data = bytearray(path.read_bytes())
    page = 4096
    for i in range(page + 8, 2 * page, 7):  # the second page's cells: the schema reads, its rows do not
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))
    for side in ("-wal", "-shm"):
        Path(f"{path}{side}").unlink(missing_ok=True)
    return path


@pytest.mark.parametrize("action", ["add", "show", "page", "prune"])
def test_a_damaged_history_is_refused_in_one_line_and_left_as_it_was(tmp_path, capsys, action):
    path = _damaged_history(tmp_path)
    before = path.read_bytes()
    capsys.readouterr()
    extra = {
        "add": [str(RUN)],
        "show": [],
        "page": [str(tmp_path / "p.html")],
        "prune": ["--keep", "1d"],
    }[action]
    code = cli.main(["history", "--history", str(path), action, *extra])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and "damaged" in err and str(path) in err, err
    assert path.read_bytes() == before


def test_a_history_row_that_does_not_decode_is_said_damaged(tmp_path, capsys):
    path = tmp_path / "h.db"
    assert cli.main(["history", "--history", str(path), "add", str(RUN)]) == 0
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE runs SET fingerprint = substr(fingerprint, 1, 20)")
    conn.close()
    capsys.readouterr()
    assert cli.main(["history", "--history", str(path), "show"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "damaged history" in err and "runs table" in err, err


@linux_only
@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_named_pipe_or_a_device_as_a_history_or_a_baseline_is_refused_before_it_is_opened(tmp_path, kind):
    if kind == "fifo":
        special = tmp_path / "ff"
        os.mkfifo(special)
    else:
        special = Path("/dev/zero")
    for options in ({"aorta_history": str(special)}, {"aorta_compare": str(special)}):
        with pytest.raises(OutputPathError, match="not a file"):
            check_option_outputs(options, {})
    with pytest.raises(RecordError, match="not a file"):  # a baseline NAME that resolves to one
        read_json_file(special)
    with pytest.raises(HistoryError, match="not a history file"):
        open_store(str(special), create=False, write=False)
    assert cli.main(["history", "--history", str(special), "show"]) == 2


@linux_only
def test_a_run_s_log_on_a_full_disk_names_the_log(tmp_path, monkeypatch):
    monkeypatch.setattr(fresh_runs, "call_to_end", lambda *a, **k: pytest.fail("started on a full disk"))
    (tmp_path / "run1.log").symlink_to("/dev/full")  # every write: ENOSPC
    with pytest.raises(WriteFailed) as failed:
        fresh_runs.run_child(["bench"], cwd=tmp_path, out_dir=tmp_path, name="run1", label="run 1", seed=1)
    assert failed.value.filename == str(tmp_path / "run1.log") and "ENOSPC" in str(failed.value)
    assert said_fault(failed.value) == (3, str(failed.value))


def test_a_lock_that_cannot_be_written_names_its_file(tmp_path, monkeypatch):
    def full(*args, **kw):
        raise OSError(errno.EDQUOT, os.strerror(errno.EDQUOT))

    monkeypatch.setattr(lock.os, "open", full)
    with pytest.raises(WriteFailed) as failed:
        with lock.locked(tmp_path / "sweep", wait_s=0, what="sweep folder"):
            pass
    assert failed.value.filename == str(lock.lock_path(tmp_path / "sweep"))
    assert "over the disk quota (EDQUOT)" in str(failed.value)


def test_faults_named_keeps_what_is_no_storage_fault(tmp_path):
    with pytest.raises(FileNotFoundError):
        with faults_named(tmp_path / "x"):
            raise FileNotFoundError(errno.ENOENT, "No such file")


def test_a_write_failure_said_inside_faults_named_keeps_its_own_file_and_words(tmp_path):
    # a writer that failed inside a command's faults_named (the run's log): its own file is named, not the log's
    inner = write_failed(tmp_path / "inner.json", OSError(errno.ENOSPC, "No space left on device"))
    with pytest.raises(WriteFailed) as failed:
        with faults_named(tmp_path / "run.log"):
            raise inner
    assert failed.value is inner
    assert str(failed.value) == (
        f"{tmp_path / 'inner.json'}: could not be written: no space left on the device (ENOSPC): free space "
        "there and run again; nothing of it was kept"
    )


@pytest.mark.slow
@linux_only
def test_history_show_into_head_says_nothing_and_exits_141(tmp_path):
    import subprocess

    path = tmp_path / "h.db"
    assert cli.main(["history", "--history", str(path), "add", str(RUN)]) == 0
    root = Path(__file__).resolve().parents[2]
    script = f"{sys.executable} -m aorta history --history {path} show | true; echo ${{PIPESTATUS[0]}}"
    proc = subprocess.run(
        ["bash", "-c", script],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    assert proc.stderr == "" and proc.stdout.strip() == "141", proc


# A history whose SQLite file is sound (quick_check: ok) but whose JSON side does not read: each way a JSON column
# or a value column can be damaged, and each command that writes or reads (leftover 3 of issue 65: `history add`
# wrote into it, exit 0).
JSON_DAMAGE = {
    "a run's fingerprint cut": ("runs", "UPDATE runs SET fingerprint = substr(fingerprint, 1, 20)"),
    "a run's settings not an object": ("runs", "UPDATE runs SET settings = '[1, 2]'"),
    "a figure's samples cut": ("figures", "UPDATE figures SET samples = substr(samples, 1, 3)"),
    "a figure's samples not a list": ("figures", "UPDATE figures SET samples = '7'"),
    "a figure's value not a number": ("figures", "UPDATE figures SET value = 'fast'"),
}
OTHER_RUN = Path(__file__).resolve().parents[1] / "data" / "report" / "hwq_per_round.json"


@pytest.mark.parametrize("action", ["add", "show", "prune", "baseline"])
@pytest.mark.parametrize("damage", sorted(JSON_DAMAGE))
def test_a_history_whose_json_side_is_damaged_is_refused_by_every_command_and_left_byte_for_byte(
    tmp_path, capsys, damage, action
):
    path = tmp_path / "h.db"
    assert cli.main(["history", "--history", str(path), "add", str(RUN)]) == 0
    table, sql = JSON_DAMAGE[damage]
    conn = sqlite3.connect(path)
    conn.execute(sql)
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    check = sqlite3.connect(path)
    assert check.execute("PRAGMA quick_check").fetchone() == ("ok",)  # SQLite's side is sound
    check.close()
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    capsys.readouterr()
    extra = {
        "add": [str(OTHER_RUN)],
        "show": [],
        "prune": ["--keep", "1h"],
        "baseline": ["cpu-torch2.13.0", str(tmp_path / "b.json")],
    }[action]
    code = cli.main(["history", "--history", str(path), action, *extra])
    err = capsys.readouterr().err
    assert code == 2, (damage, err)
    assert err.count("\n") == 1 and f"{path}: is a damaged history" in err and f"its {table} table" in err, (
        err
    )
    assert "Traceback" not in err
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # nothing changed, nothing created
