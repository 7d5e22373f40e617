"""The proof driver refuses before any run, in one line (issue 46): a budget that is not seconds above zero
(``--budget -5`` and ``nan`` ran nothing and exited 0), an output folder that is a file, an archive that is
none (a traceback)."""

from __future__ import annotations

import tarfile

import pytest

from scripts.gpu import prove


@pytest.mark.parametrize("budget", ["-5", "nan", "inf", "0"])
def test_the_proof_drivers_budget_must_be_seconds_above_zero(budget, capsys):
    with pytest.raises(SystemExit) as stop:
        prove.main(["gate", "--budget", budget, "--dry-run"])
    assert stop.value.code == 2
    assert f"--budget={budget!r}: give seconds above 0" in capsys.readouterr().err


def test_the_proof_drivers_out_naming_a_file_is_refused_before_any_run(tmp_path, capsys):
    existing = tmp_path / "table.txt"
    existing.write_text("an earlier table")
    assert prove.main(["gate", "--out", str(existing)]) == 2
    assert f"--out {existing}: {existing} is a file, not a folder" in capsys.readouterr().err
    assert existing.read_text() == "an earlier table"


@pytest.mark.parametrize("content", [b"", b"not gzip at all"], ids=["empty", "garbage"])
def test_judging_an_archive_that_is_no_archive_is_one_line(tmp_path, capsys, content):
    bad = tmp_path / "pool_a.tgz"
    bad.write_bytes(content)
    assert prove.main(["judge", str(bad), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"input {bad}: not a readable archive" in err and "Traceback" not in err


def test_an_archive_that_is_an_empty_tar_still_gives_a_table(tmp_path):
    empty = tmp_path / "pool_a.tgz"
    with tarfile.open(empty, "w:gz"):
        pass
    assert prove.main(["judge", str(empty), "--out", str(tmp_path / "out")]) in (0, 1)


def test_a_knob_given_without_set_is_refused_with_the_way_to_set_it(tmp_path, capsys):
    # `prove gate_power part=save save=265s` read both as input paths: a proof that reads no input ran with its
    # defaults (190 s, not 265 s), and a dry run printed them without a word
    for args in (["--dry-run"], ["--out", str(tmp_path / "out")]):
        assert prove.main(["gate_power", "part=save", "save=265s", *args]) == 2
        assert (
            "input part=save: no such file or folder; a knob is set with --set part=save"
            in capsys.readouterr().err
        )
    assert not (tmp_path / "out").exists()
