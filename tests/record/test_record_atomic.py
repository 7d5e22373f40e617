"""aorta's one atomic writer (aorta/record/atomic.py): a reader sees the old file or the new one, never half
of one; a write that fails or is interrupted leaves what was saved byte for byte and no temp file; the new
file is as readable as one ``open(path, "w")`` makes, and on disk before it takes the old one's place."""

import os
import re

import pytest

from aorta.processes.lock import remove_stale_temps
from aorta.record import atomic
from aorta.record.atomic import write_bytes_atomic, write_json_atomic, write_text_atomic

OLD = b"saved run: \x00\xff keep me\n"


def _folder_holds(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_the_new_bytes_replace_the_old_file_whole_and_the_path_is_returned(tmp_path):
    target = tmp_path / "run.json"
    target.write_bytes(OLD)
    assert write_bytes_atomic(str(target), b"new\x00bytes") == target  # a str path, given back as a Path
    assert target.read_bytes() == b"new\x00bytes"
    assert _folder_holds(tmp_path) == ["run.json"]


def test_missing_folders_are_made_and_an_existing_one_is_used(tmp_path):
    deep = tmp_path / "a" / "b" / "run.json"
    write_bytes_atomic(deep, b"1")
    write_bytes_atomic(deep.parent / "other.json", b"2")  # the folder exists now
    assert (deep.read_bytes(), (deep.parent / "other.json").read_bytes()) == (b"1", b"2")


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_the_file_is_as_readable_as_open_makes_it_mode_666_less_the_umask(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        write_bytes_atomic(tmp_path / "run.json", b"x")
        with open(tmp_path / "plain.json", "w") as f:
            f.write("x")
    finally:
        os.umask(old)
    assert (tmp_path / "run.json").stat().st_mode & 0o777 == mode
    assert (tmp_path / "plain.json").stat().st_mode & 0o777 == mode


def test_the_temp_file_is_beside_the_target_named_as_the_stale_temp_cleaner_finds_it(tmp_path, monkeypatch):
    """``.<name>.<12 hex>.tmp`` in the target's folder: same file system (the rename is atomic), hidden,
    and what ``aorta.processes.lock.remove_stale_temps`` removes after a save killed mid-write."""
    renamed = []
    real_replace = os.replace

    def replace(src, dst):
        renamed.append((src, dst))
        real_replace(src, dst)

    monkeypatch.setattr(atomic.os, "replace", replace)
    target = tmp_path / "run.json"
    write_bytes_atomic(target, b"x")
    [(tmp, dst)] = renamed
    assert dst == target and tmp.parent == tmp_path
    assert re.fullmatch(r"\.run\.json\.[0-9a-f]{12}\.tmp", tmp.name), tmp.name
    tmp.write_bytes(b"left by a killed save")
    assert remove_stale_temps(target) == [tmp] and _folder_holds(tmp_path) == ["run.json"]


def test_a_temp_name_already_taken_is_never_reused_the_next_name_is_tried(tmp_path, monkeypatch):
    class Uuid:
        def __init__(self, hex_):
            self.hex = hex_

    names = iter([Uuid("a" * 12 + "0" * 20), Uuid("a" * 12 + "1" * 20), Uuid("b" * 32), Uuid("c" * 32)])
    monkeypatch.setattr(atomic.uuid, "uuid4", lambda: next(names))
    taken = tmp_path / ".run.json.aaaaaaaaaaaa.tmp"  # another writer's temp file, mid-write
    taken.write_bytes(b"another writer's")
    write_bytes_atomic(tmp_path / "run.json", b"mine")
    assert taken.read_bytes() == b"another writer's"
    assert (tmp_path / "run.json").read_bytes() == b"mine"
    assert _folder_holds(tmp_path) == [".run.json.aaaaaaaaaaaa.tmp", "run.json"]
    assert next(names).hex == "c" * 32  # uuid4 asked three times: twice the taken name, then a free one


def test_the_bytes_are_flushed_and_fsynced_before_the_rename(tmp_path, monkeypatch):
    """The rename must not reach the disk before the data does: fsync sees every byte in the file, and
    the rename comes after it."""
    events = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        events.append(("fsync", os.fstat(fd).st_size))
        real_fsync(fd)

    def replace(src, dst):
        events.append(("replace", os.path.getsize(src)))
        real_replace(src, dst)

    monkeypatch.setattr(atomic.os, "fsync", fsync)
    monkeypatch.setattr(atomic.os, "replace", replace)
    write_bytes_atomic(tmp_path / "run.json", b"0123456789")
    assert events == [("fsync", 10), ("replace", 10)]


@pytest.mark.parametrize("where", ["fsync", "replace"])
@pytest.mark.parametrize("error", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_a_write_that_fails_or_is_interrupted_leaves_the_old_file_byte_identical_and_no_temp(
    tmp_path, monkeypatch, where, error
):
    target = tmp_path / "run.json"
    target.write_bytes(OLD)

    def fail(*args):
        raise error

    monkeypatch.setattr(atomic.os, where, fail)
    with pytest.raises(type(error)):
        write_bytes_atomic(target, b"the new run, never seen")
    assert target.read_bytes() == OLD
    assert _folder_holds(tmp_path) == ["run.json"]


def test_a_failed_first_write_leaves_no_file_at_all(tmp_path, monkeypatch):
    monkeypatch.setattr(atomic.os, "fsync", lambda fd: (_ for _ in ()).throw(OSError(5, "I/O error")))
    with pytest.raises(OSError, match="I/O error"):
        write_bytes_atomic(tmp_path / "run.json", b"x")
    assert _folder_holds(tmp_path) == []


def test_text_is_written_as_utf8_and_json_with_indent_1_str_for_other_objects_and_a_final_newline(tmp_path):
    assert write_text_atomic(tmp_path / "t.txt", "é µs\n") == tmp_path / "t.txt"
    assert (tmp_path / "t.txt").read_bytes() == "é µs\n".encode()
    out = write_json_atomic(tmp_path / "v.json", {"b": [1, 2.5], "path": tmp_path / "x", "é": None})
    assert out == tmp_path / "v.json"
    assert (
        out.read_bytes()
        == (
            '{\n "b": [\n  1,\n  2.5\n ],\n "path": "' + str(tmp_path / "x") + '",\n "\\u00e9": null\n}\n'
        ).encode()
    )
