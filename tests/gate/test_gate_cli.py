"""``aorta compare`` on saved runs, in process: what it refuses before any verdict and what it does when the
verdict cannot be written (exit codes as README.md lists them)."""

from test_gate_offline import bench, run, write

from aorta.cli import main
from aorta.exit_codes import EXIT_INCONCLUSIVE, EXIT_SETTINGS_DIFFER, EXIT_WRITE_FAILED
from aorta.gate import cli as gate_cli

TREE = {"NCCL_NVLS_ENABLE": "0", "NCCL_ALGO": "Tree"}


def test_scheduling_settings_that_differ_in_any_candidate_file_refuse_the_compare(tmp_path, capsys):
    ref = write(tmp_path, "ref.json", run([bench("a", 10.0)]))
    same = write(tmp_path, "new1.json", run([bench("a", 10.0, seed=1)]))
    other = write(tmp_path, "new2.json", run([bench("a", 10.0, seed=2)], env=TREE))  # only the second
    assert main(["compare", ref, same, other]) == EXIT_SETTINGS_DIFFER
    err = capsys.readouterr().err
    assert f"scheduling settings differ between {ref} and {other}: NCCL_ALGO" in err
    assert f"between {ref} and {same}" not in err
    assert (
        main(["compare", ref, same, other, "--allow-env-diff", "NCCL_ALGO"]) == EXIT_INCONCLUSIVE
    )  # compared


def test_a_verdict_that_cannot_be_written_exits_3_saying_where(tmp_path, capsys, monkeypatch):
    ref = write(tmp_path, "ref.json", run([bench("a", 10.0)]))
    cand = write(tmp_path, "new.json", run([bench("a", 10.0, seed=1)]))

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(gate_cli, "write_outputs", disk_full)
    assert main(["compare", ref, cand]) == EXIT_WRITE_FAILED  # the verdicts were made: no bad input
    err = capsys.readouterr().err
    assert f"aorta compare: could not write --verdict-json {tmp_path / 'new.verdict.json'}: " in err
