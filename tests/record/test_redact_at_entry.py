"""Secrets hidden where text enters (issue 56, class 2): a launcher's settings, a command line, an environment,
URLs of any form and libpq key=value strings, so no header, verdict, sweep.json, report or summary can print or
store them; a libpq connection string given as a history is PostgreSQL or refused, never a SQLite file name."""

from __future__ import annotations

import json
import sys

import pytest

from aorta.cli import main
from aorta.exit_codes import EXIT_USAGE
from aorta.history.store import is_postgresql, parse_history_url
from aorta.record.redact import argv_secrets, libpq_fields, redact_env, redact_launcher, redact_text

SECRET = "Hunter2-pw"


@pytest.mark.parametrize(
    "launcher",
    [
        f"PGPASSWORD={SECRET} HF_TOKEN={SECRET}x python3",
        f"HF_TOKEN='{SECRET} with spaces' python3",
        f'AWS_SECRET_ACCESS_KEY="{SECRET}" OPENAI_KEY={SECRET} docker run img python3',
        f"AORTA_HISTORY=postgresql://ann:{SECRET}@db/h python3",
        f"DSN='host=db password={SECRET}' python3",
    ],
)
def test_a_launcher_is_shown_with_every_secret_hidden(launcher):
    shown = redact_launcher(launcher)
    assert SECRET not in shown and "spaces" not in shown
    assert "python3" in shown and "***" in shown


def test_a_launcher_keeps_settings_that_are_not_secret():
    assert (
        redact_launcher("GPU_MAX_HW_QUEUES=4 NCCL_DEBUG=INFO python3")
        == "GPU_MAX_HW_QUEUES=4 NCCL_DEBUG=INFO python3"
    )


def test_key_named_variables_are_secret_and_keyless_ones_are_not():
    assert redact_env({"SSH_KEY": "k", "OPENAI_KEY": "k", "MONKEY": "m", "KEYBOARD": "x"}) == {
        "SSH_KEY": "***",
        "OPENAI_KEY": "***",
        "MONKEY": "m",
        "KEYBOARD": "x",
    }
    assert redact_text(f"HF_TOKEN='{SECRET} b' run") == "HF_TOKEN=*** run"


def test_a_libpq_string_is_read_as_libpq_reads_it():
    assert libpq_fields("host=h dbname=d user=u password='p w'") == {
        "host": "h",
        "dbname": "d",
        "user": "u",
        "password": "p w",
    }
    assert libpq_fields(".aorta/history.db") is None
    assert libpq_fields("host=h bogus=1") is None


def test_a_libpq_string_as_history_is_postgresql():
    dsn = f"host=db dbname=h user=ann password={SECRET}"
    assert parse_history_url(dsn) == dsn and is_postgresql(dsn)
    assert not is_postgresql(".aorta/history.db")


def test_key_value_text_that_is_not_libpq_is_refused_with_its_password_hidden():
    with pytest.raises(ValueError, match="not as a libpq connection string") as info:
        parse_history_url(f"host=db bogus=1 password={SECRET}")
    assert SECRET not in str(info.value)


def test_a_libpq_history_connects_to_postgresql_and_creates_no_file(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    dsn = f"host=127.0.0.1 port=1 dbname=h user=ann password={SECRET} connect_timeout=2"
    assert main(["history", "--history", dsn, "show"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "cannot connect" in err and SECRET not in err
    assert list(tmp_path.iterdir()) == []  # no SQLite file named with the password


def test_ab_shows_its_launchers_with_their_secrets_hidden(tmp_path, capsys):
    code = main(
        [
            "ab",
            "--a",
            "",
            "--b",
            f"PGPASSWORD={SECRET} /nonexistent/python3",
            "--out",
            str(tmp_path / "o"),
            "--",
            "x",
        ]
    )
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert "PGPASSWORD=***" in err and SECRET not in err


@pytest.mark.parametrize("form", ["--b VALUE", "--b=VALUE"])
def test_ab_past_its_launcher_checks_prints_and_stores_no_secret_of_a_launcher(tmp_path, capsys, form):
    """Both sides pass the launcher check (stand-ins answer it without torch) and A's check run fails: the run's
    header line shows B's program with its setting hidden (not the program hidden with it), and no output or
    file of its folder holds the secret, whichever way the option is written."""
    from test_ab import probe_answered

    a_side = probe_answered(tmp_path / "a_side", "exit 0")
    b_side = probe_answered(tmp_path / "b_side", "exit 0")
    b = f"PGPASSWORD={SECRET} {b_side}"
    b_args = ["--b", b] if form == "--b VALUE" else [f"--b={b}"]
    out = tmp_path / "o"
    code = main(["ab", "--a", str(a_side), *b_args, "--runs", "2", "--out", str(out), "--", "test_x.py"])
    said = capsys.readouterr()
    assert code == 1
    assert f"B = 'PGPASSWORD=*** {b_side}'" in said.out
    assert SECRET not in said.out + said.err
    files = [p for p in out.rglob("*") if p.is_file()]
    assert files
    assert [p for p in files if SECRET in p.read_text(errors="replace")] == []


@pytest.mark.parametrize(
    "argv",
    [
        ["ab", "--b", "PGPASSWORD=Hunter2-pw /venv/bin/python"],
        ["ab", "--b=PGPASSWORD=Hunter2-pw /venv/bin/python"],
    ],
)
def test_a_launcher_on_the_command_line_is_secret_only_in_its_settings_values(argv):
    assert set(argv_secrets(argv)) == {"Hunter2-pw"}


def test_a_setting_given_as_one_word_with_a_space_is_secret_whole():
    assert "Hunter2 pw" in argv_secrets(["env", "HF_TOKEN=Hunter2 pw", "cmd"])


def test_sweep_json_never_holds_the_password_of_its_command(tmp_path):
    from aorta.sweep import manifest as mf
    from aorta.sweep.grid import expand, parse_axes
    from aorta.sweep.runner import run_sweep

    script = tmp_path / "bench.py"
    script.write_text(
        "import json, sys\n"
        "out = next(a.split('=', 1)[1] for a in sys.argv if a.startswith('--benchmark-json='))\n"
        "json.dump({'benchmarks': []}, open(out, 'w'))\n"
    )
    cmd = [sys.executable, str(script), f"--aorta-history=postgresql://ann:{SECRET}@db/h"]
    axes = parse_axes(["NCCL_NTHREADS=64"], [])
    doc = mf.new_manifest("stack", axes, cmd, {"PGPASSWORD": SECRET}, expand(axes))
    folder = tmp_path / "sw"
    folder.mkdir()
    mf.write_manifest(folder, doc)
    with open(tmp_path / "out.txt", "w") as out:
        code = run_sweep(
            folder,
            doc,
            expand(axes),
            cmd,
            force=False,
            timeout_s=None,
            environ={"PATH": "/usr/bin:/bin"},
            out=out,
        )
    assert code == 0, (tmp_path / "out.txt").read_text()
    text = (folder / mf.MANIFEST).read_text()
    assert SECRET not in text
    assert "postgresql://ann:***@db/h" in text


def test_a_report_of_an_old_sweep_that_holds_a_password_hides_it(tmp_path):
    from aorta.report.sweeps import load_sweep
    from aorta.sweep import manifest as mf
    from aorta.sweep.grid import expand, parse_axes

    axes = parse_axes(["NCCL_NTHREADS=64"], [])
    doc = mf.new_manifest("stack", axes, ["pytest"], {}, expand(axes))
    doc["command"] = [
        "pytest",
        f"--aorta-history=postgresql://ann:{SECRET}@db/h",
    ]  # as written before issue 56
    doc["base_env"] = {"HF_TOKEN": SECRET}
    (tmp_path / mf.MANIFEST).write_text(json.dumps(doc))
    sweep = load_sweep(tmp_path)
    assert SECRET not in json.dumps([sweep.command, sweep.base_env])
