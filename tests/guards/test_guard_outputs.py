"""The output checks leave nothing behind (aorta/record/output_paths.py, issue 58): writability is tried with a
temporary file that is removed again, so a check of a folder (the baseline folder, the runs folder, a trace
merge's) never adds a file to it, whichever check it is."""

import pytest

from aorta.record import output_paths


@pytest.mark.parametrize(
    "check",
    [
        lambda p: output_paths.check_output_dir("--out", p),
        lambda p: output_paths.check_output_file("--out", p / "x.json"),
        lambda p: output_paths.check_output_renamed_into_place("--out", p / "x"),
        lambda p: output_paths.check_appendable("--out", p / "summary.md"),
    ],
    ids=["dir", "file", "renamed", "appendable"],
)
def test_a_check_leaves_the_folder_as_it_was(tmp_path, check):
    (tmp_path / "kept.txt").write_text("x")
    check(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.txt"]


def test_a_folder_that_cannot_be_written_is_refused_naming_option_and_folder(tmp_path, monkeypatch):
    def no_room(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(output_paths.tempfile, "mkstemp", no_room)
    with pytest.raises(output_paths.OutputPathError) as exc:
        output_paths.check_output_dir("--aorta-runs-dir", tmp_path / "runs")
    assert (
        str(exc.value)
        == f"--aorta-runs-dir {tmp_path / 'runs'}: cannot write in {tmp_path}: no space left on the device (ENOSPC): "
        "free space there and run again"
    )
