"""``aorta ab``'s refusals and run lines word for word (aorta/gate/runs/ab.py, issue 58): an option the command
may not hold refused in any spelling, a setting whose value holds '=', a word that is neither a setting nor a
program, and the line each kind of command becomes."""

import pytest

from aorta.gate.runs.ab import AbError, Launcher, check_command, parse_launcher, run_command

OWNED_SAID = (
    "aorta ab sets each run's --aorta-lean-run, --aorta-order-seed, --benchmark-json, --aorta-only-file itself "
    "and judges the runs; leave out --aorta-compare, --aorta-save-baseline, --aorta-runs, --aorta-confirm and "
    "--aorta-budget"
)


def test_no_command_is_refused_saying_what_to_give():
    with pytest.raises(AbError) as exc:
        check_command([])
    assert str(exc.value) == (
        "no command after '--': give what both sides run, e.g. '-- benchmarks/hw_queue -m p0' or "
        "'-- torchrun --standalone --nproc_per_node 2 -m pytest benchmarks/fsdp'"
    )


@pytest.mark.parametrize("word", ["--aorta-runs=a=b", "--aorta-runs", "--benchmark-json=x.json"])
def test_an_option_aorta_ab_sets_itself_is_refused_in_any_spelling(word):
    with pytest.raises(AbError) as exc:
        check_command(["benchmarks/hw_queue", word])
    assert str(exc.value) == f"the command holds {word.split('=')[0]}: {OWNED_SAID}"


def test_a_settings_value_may_hold_an_equals_sign():
    side = parse_launcher("--b", "NCCL_ALGO=a=b OTHER= /opt/venv/bin/python -X dev", "B")
    assert side == Launcher("B", {"NCCL_ALGO": "a=b", "OTHER": ""}, ("/opt/venv/bin/python", "-X", "dev"))


def test_a_word_neither_setting_nor_program_is_refused_naming_it():
    with pytest.raises(AbError) as exc:
        parse_launcher("--a", "1BAD=x=y python", "A")
    assert str(exc.value) == (
        "--a='1BAD=x=y python': '1BAD' is not an environment variable name (letters, digits and _, not starting "
        "with a digit); settings come first as NAME=VALUE, then the Python command"
    )


PY = Launcher("B", {}, ("/opt/venv/bin/python",))
TAIL = [
    "--benchmark-json=r.json",
    "--aorta-order-seed=3",
    "--aorta-kernel-pass-rounds=2",
]  # the gate's pass rounds


@pytest.mark.parametrize(
    ("cmd", "line"),
    [
        (["py.test", "-q"], ["/opt/venv/bin/python", "-m", "pytest", "-q"]),
        (["pytest", "-q"], ["/opt/venv/bin/python", "-m", "pytest", "-q"]),
        (["/usr/bin/python3.12", "-m", "pytest", "t"], ["/opt/venv/bin/python", "-m", "pytest", "t"]),
        (
            ["torchrun", "--nproc_per_node", "2"],
            ["/opt/venv/bin/python", "-m", "torch.distributed.run", "--nproc_per_node", "2"],
        ),
        (["benchmarks/hw_queue"], ["/opt/venv/bin/python", "-m", "pytest", "benchmarks/hw_queue"]),
    ],
)
def test_each_kind_of_command_runs_on_the_sides_python(cmd, line):
    assert run_command(PY, cmd, json_path="r.json", seed=3, lean=False) == [*line, *TAIL]


def test_a_restricted_lean_run_says_so_and_names_its_list():
    got = run_command(PY, ["t.py"], json_path="r.json", seed=3, lean=True, only_file="only.txt")
    assert got[-2:] == ["--aorta-lean-run", "--aorta-only-file=only.txt"]


@pytest.mark.parametrize(
    "cmd",
    [
        ["benchmarks/hw_queue", "--aorta-kernel-pass-rounds=4"],
        ["benchmarks/hw_queue", "--aorta-kernel-pass-rounds", "4"],
        ["--aorta-kernel-pass-rounds=4", "benchmarks/hw_queue"],  # pytest arguments may start with it
        ["pytest", "--aorta-kernel-pass-rounds=4", "t"],
    ],
)
def test_a_command_that_gives_its_own_kernel_pass_rounds_keeps_them(cmd):
    line = run_command(PY, cmd, json_path="r.json", seed=3, lean=False)
    assert not any(w.startswith("--aorta-kernel-pass-rounds=2") for w in line), line


def test_an_option_that_only_starts_like_the_pass_rounds_is_not_them():
    line = run_command(
        PY, ["t", "--aorta-kernel-pass-rounds-extra=1"], json_path="r.json", seed=3, lean=False
    )
    assert line[-1] == "--aorta-kernel-pass-rounds=2"


def test_a_launcher_of_settings_only_or_nothing_runs_this_python():
    import sys

    assert parse_launcher("--a", "A=1 B=x", "A") == Launcher("A", {"A": "1", "B": "x"}, ())
    assert parse_launcher("--a", "A=1", "A").python_cmd() == [sys.executable]
    assert parse_launcher("--b", "", "B") == Launcher("B", {}, ())
    assert parse_launcher("--b", None, "B") == Launcher("B", {}, ())  # type: ignore[arg-type]


def test_a_launcher_that_cannot_be_split_is_refused_naming_why():
    with pytest.raises(AbError) as exc:
        parse_launcher("--b", "python 'oops", "B")
    assert str(exc.value) == '--b="python \'oops": cannot be split into words (No closing quotation)'


def test_pytest_arguments_holding_m_are_pytest_arguments_not_a_python_module():
    line = run_command(PY, ["benchmarks/hw_queue", "-m", "p0"], json_path="r.json", seed=3, lean=False)
    assert line == ["/opt/venv/bin/python", "-m", "pytest", "benchmarks/hw_queue", "-m", "p0", *TAIL]


def test_the_sides_alternate_a_b_then_b_a():
    from aorta.gate.runs.ab import pair_order

    assert [pair_order(k) for k in (1, 2, 3, 4)] == [("A", "B"), ("B", "A"), ("A", "B"), ("B", "A")]
