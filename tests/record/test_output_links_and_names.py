"""Outputs under a symbolic link that leads nowhere, or with a name too long for the filesystem, are refused
before any work (issue 38, case 16): both passed the up-front check and failed after the run (``NOT saved``,
exit 13) or as an ``INTERNALERROR``."""

import pytest

from aorta.record.output_paths import OutputPathError, check_output_dir, check_output_file


def test_a_folder_that_is_a_symlink_loop_is_refused_naming_the_link(tmp_path):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(
        OutputPathError, match=r"--aorta-baseline-dir .*loop: .*loop is a symbolic link that leads nowhere"
    ):
        check_output_dir("--aorta-baseline-dir", loop)
    with pytest.raises(OutputPathError, match="leads nowhere"):
        check_output_dir("--aorta-baseline-dir", loop / "cpu")


def test_a_link_to_a_missing_target_is_refused_too(tmp_path):
    (tmp_path / "gone").symlink_to(tmp_path / "never-made")
    with pytest.raises(OutputPathError, match="leads nowhere"):
        check_output_file("--aorta-verdict-json", tmp_path / "gone" / "v.json")


def test_a_name_too_long_for_the_filesystem_is_refused_with_the_limit(tmp_path):
    with pytest.raises(
        OutputPathError, match=r"--benchmark-json .*: the name x{40}\.\.\. is 300 bytes long; .* at most \d+"
    ):
        check_output_file("--benchmark-json", tmp_path / ("x" * 295 + ".json"))
    check_output_file("--benchmark-json", tmp_path / ("x" * 200 + ".json"))  # long but allowed
