"""``aorta ab --a LAUNCHER --b LAUNCHER [--runs auto|N] [--budget 10m] -- COMMAND``: the A/B gate on one machine.

Runs COMMAND under both launchers (``aorta.gate.runs.ab``) in alternating fresh processes, pair by pair, and
judges B's runs against A's with the gate's verdicts (``aorta.gate.comparison.compare``). ``--runs auto`` (the default)
adds pairs at the sequential rule's looks until every figure is decided or ``--budget`` ends
(``aorta.gate.session.auto_runs``); the first pair is full, later pairs time the rounds only and run just the
benchmarks still undecided. Settings that differ between the launchers are the change under test: shown in
the header, never refused. Exit codes as ``aorta compare``: 0 clean, 10 B SLOWER, 15 inconclusive, 2 bad input.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from aorta.exit_codes import EXIT_USAGE, EXIT_WRITE_FAILED
from aorta.gate.baselines import baseline as bl
from aorta.gate.cli import add_judging_arguments, add_output_arguments, argtype, settings_from
from aorta.gate.comparison.compare import Comparison, compare_runs
from aorta.gate.outputs.outputs import write_outputs
from aorta.gate.outputs.render import overall_exit, terminal_lines
from aorta.gate.runs import launcher_check as lc
from aorta.gate.runs.ab import AbError, Launcher, check_command, pair_order, parse_launcher, run_command
from aorta.gate.runs.fresh_runs import (
    CHILD_ENV,
    ChildRun,
    read_doc,
    recorded_sample,
    wall_of,
    write_only_file,
)
from aorta.gate.runs.run_wall import RunWall
from aorta.gate.runs.run_wall import report as wall_report
from aorta.gate.session import check_pass
from aorta.gate.session.auto_runs import AutoOutcome, run_auto, time_line
from aorta.gate.stats.sequential import LOOKS, Budget, parse_budget
from aorta.processes import fork_server, warm_rank
from aorta.processes.child_process import call_to_end, end_tree, ended, exit_status, start_child
from aorta.record.output_arguments import holds_records, output_argument
from aorta.record.output_paths import OutputPathError, check_not_another_output, check_output_file
from aorta.record.redact import env_secrets, redact_argv, redact_launcher
from aorta.record.storage_faults import faults_named
from aorta.stats.option_values import parse_whole
from aorta.timing.slowdown import UNITS_ENV

DEFAULT_BUDGET = "10m"


def _runs(text: str) -> int:
    if text.strip().lower() == "auto":
        return 0
    return parse_whole("--runs", text, 2, LOOKS[-1], "pairs of runs (or auto)")


def add_ab_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--a", required=True, metavar="LAUNCHER", help="side A: 'NAME=VALUE ... [python command]'"
    )
    parser.add_argument("--b", required=True, metavar="LAUNCHER", help="side B, judged against A")
    parser.add_argument("--label-a", default="A", help="side A's name in the verdicts (default A)")
    parser.add_argument("--label-b", default="B", help="side B's name in the verdicts (default B)")
    parser.add_argument(
        "--runs",
        type=argtype(_runs),
        default=0,
        metavar="auto|N",
        help="N pairs of runs, or auto (default): pairs added until every figure is decided or --budget ends",
    )
    parser.add_argument(
        "--budget",
        type=argtype(lambda t: parse_budget("--budget", t)),
        default=None,
        metavar="TIME",
        help=f"with --runs auto: the wall the runs may take (default {DEFAULT_BUDGET}); no pair starts that the "
        "slowest pair so far would carry past it",
    )
    holds_records(
        output_argument(
            parser,
            "--out",
            kind="dir",
            default=None,
            metavar="DIR",
            help="where the runs, logs and verdict go (default .aorta/ab/<time>)",
        ),
        RUN_RECORDS,
    )
    parser.add_argument(
        "--check-run",
        type=argtype(lambda t: check_pass.parse_mode(t, "--check-run")),
        default="always",
        metavar="auto|always",
        help="the check pair (output checks, kernel passes, known answers): always (default, until proven on "
        "GPUs) runs it; auto skips it where both sides' launcher, command, code, stack and machine passed it "
        f"before ({AB_CHECKS}/{check_pass.FILE_NAME})",
    )
    add_judging_arguments(parser)
    add_output_arguments(parser, "DIR/verdict.json")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then what both sides run")


AB_CHECKS = Path(".aorta") / "ab"  # the check pairs that passed (aorta.gate.session.check_pass)


def _check_records(args, command: list[str]) -> tuple[dict[str, str], dict[str, check_pass.Passed]]:
    """Each side's record key, and the records that vouch for both sides (none unless both have one)."""
    keys = {"A": check_pass.command_key(command, args.a), "B": check_pass.command_key(command, args.b)}
    if args.check_run != "auto":
        return keys, {}
    records = check_pass.load(AB_CHECKS)
    found = {side: check_pass.find(records, key, None) for side, key in keys.items()}
    return keys, ({s: p for s, p in found.items() if p is not None} if all(found.values()) else {})


def _vouches(priors: dict[str, check_pass.Passed], docs: dict[str, list[Path]]):
    def vouches(pair: ChildRun) -> str | None:
        for side, prior in priors.items():
            why = check_pass.verify(prior, read_doc(docs[side][-1]) if docs[side] else None)
            if why is not None:
                return f"side {side}: {why}"
        return None

    return vouches


def _keep_check_records(keys: dict[str, str], outcome: AutoOutcome, out: Path) -> None:
    check = outcome.check
    if check is None or not check.ok:
        return
    for side, key in keys.items():
        doc = read_doc(out / f"{side}check.json")
        log = str(out / f"{side}check.log")
        why = check_pass.keep(AB_CHECKS, key, doc, check.wall_s / 2, check.lean_estimate_s, log)
        if why is not None:
            print(f"aorta ab: the check pair's record was not kept ({why}): the next A/B runs its check pair")
            return


# What aorta ab writes into --out and reads back: each side's runs (``A1.json``, ``Bcheck.log``, ``A3.done``) and
# its slowdown calibration (_pair_runner).
RUN_RECORDS = r"[AB](check|\d+)\.(json|log|done)|slowdown_units_[AB]\.json"


def _pair_runner(
    a: Launcher,
    b: Launcher,
    command: list[str],
    out: Path,
    docs: dict[str, list[Path]],
    walls: list[RunWall] | None = None,
):
    """``start(k, only, lean)`` for ``run_auto``: pair k runs A and B in alternating order with the same
    seed and selection (one block: ``aorta.gate.runs.blocks``); pair 0 is the check pair (full runs), a sample pair
    too: unlike a compare against a saved baseline, both sides of ``aorta ab`` hold the same blocks."""

    def start(k: int, only, lean: bool) -> ChildRun:
        only_file = write_only_file(out, f"pair{k}", only)
        wall, last, sample, estimate = 0.0, None, True, 0.0
        name = "check run" if k == 0 else f"pair {k}"
        for side in pair_order(k) if k else ("A", "B"):
            launcher = a if side == "A" else b
            stem = f"{side}check" if k == 0 else f"{side}{k}"
            json_path, log_path = out / f"{stem}.json", out / f"{stem}.log"
            cmd = run_command(
                launcher,
                command,
                json_path=str(json_path),
                seed=k,
                lean=lean,
                only_file=str(only_file) if only_file else None,
            )
            env = {
                UNITS_ENV: str(out / f"slowdown_units_{side}.json"),  # a side's slowdown calibrated once
                **os.environ,
                **launcher.env,
                CHILD_ENV: f"ab {side} {k}",
            }
            t0 = time.monotonic()
            with faults_named(log_path):  # a full disk: one line naming the log (issue 65)
                log = open(log_path, "w")  # noqa: SIM115 (closed by the with below)
                log.write("$ " + " ".join(redact_argv(cmd, env_secrets(env))) + "\n")  # no password in a log
                log.flush()
            with log:
                raw, hung = call_to_end(  # dies with this process (issue 38, case 6)
                    cmd,
                    done_file=str(out / f"{stem}.done"),
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    who="aorta ab",
                )
            code = exit_status(raw)  # killed by signal 9: 137, not -9 (issue 38, case 9)
            took = time.monotonic() - t0
            wall += took
            ok = code == 0 and json_path.is_file()
            what = "" if only is None else f", {len(only)} undecided benchmark(s)"
            no_json = "" if json_path.is_file() else ", no JSON"  # as the gate says of its children
            run = "check run" if k == 0 else f"run {k}{' (lean)' if lean else ''}"
            print(
                f"aorta ab: {launcher.label} {run}{what}: "
                f"{'ok' if ok else f'FAILED ({ended(raw)}{no_json})'} in {took:.1f} s, log {log_path}",
                flush=True,
            )
            if hung:
                print(f"aorta ab: {launcher.label} run {k} {hung}", flush=True)
            last = ChildRun(
                f"{launcher.label} {name}",
                code if code else (0 if ok else 1),
                json_path,
                log_path,
                wall,
                lean,
            )
            if not ok:
                return last
            sample = sample and recorded_sample(json_path)
            docs[side if k else f"{side}check"].append(json_path)
            mine = wall_of(replace(last, wall_s=took), "check" if k == 0 else ("lean" if lean else "full"))
            estimate += mine.lean_estimate_s()
            if walls is not None:
                walls.append(mine)
        assert last is not None
        if k == 0:  # the check pair is a sample pair: both sides ran it the same way (one block, one kind),
            # so it pairs within its block and, judged as independent runs, weighs on both sides alike
            sample = True
            for side in ("A", "B"):
                docs[side].extend(docs[f"{side}check"])
        return ChildRun(
            name, 0, last.json_path, last.log_path, wall, lean, sample=sample, lean_estimate_s=estimate
        )

    return start


def _judge(args, a: Launcher, b: Launcher, docs: dict[str, list[Path]], settings) -> Comparison:
    side = {}
    for name in ("A", "B"):
        runs = [bl.load_run(p) for p in docs[name]]
        checks = [p for p in docs.get(f"{name}check", []) if p not in docs[name]]
        check = bl.load_run(checks[0]) if checks else None
        side[name] = bl.combine_runs(runs, [f"{name.lower()}{k + 1}" for k in range(len(runs))], check=check)
    return compare_runs(
        side["A"],
        side["B"],
        settings,
        ref_label=f"{a.label} ({len(docs['A'])} runs: {args.a or 'this python'})",
        cand_label=f"{b.label} ({len(docs['B'])} runs: {args.b or 'this python'})",
    )


LAUNCHER_CHECK_S = 300.0  # a docker launcher may pull its image first


def check_launchers(sides: list[tuple[str, str, Launcher]]) -> None:
    """Each side's Python starts, imports torch and aorta from outside this checkout under its settings, and
    sees the devices side A sees (``aorta.gate.runs.launcher_check``): refused before any run, not after A's
    runs were spent (issues 46 and 56). The sides are asked at once, each in an empty folder of its own."""
    import tempfile

    roots = lc.checkout_roots()
    started = []
    with tempfile.TemporaryDirectory(prefix="aorta-ab-check-") as empty:
        for option, text, launcher in sides:
            cmd = [*launcher.python_cmd(), "-c", lc.PROBE]
            env = lc.probe_env(os.environ, launcher.env, roots)
            try:
                proc = start_child(
                    cmd, env=env, cwd=empty, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
                )
            except OSError as exc:
                raise AbError(
                    f"{option}={text!r}: {launcher.python_cmd()[0]} cannot start: {exc.strerror or exc}"
                ) from None
            started.append((option, text, launcher, proc))
        probes = []
        try:
            for option, text, launcher, proc in started:
                try:
                    said, _ = proc.communicate(timeout=LAUNCHER_CHECK_S)
                except subprocess.TimeoutExpired:
                    raise AbError(
                        f"{option}={text!r}: its Python did not answer the check (import torch and aorta) in "
                        f"{LAUNCHER_CHECK_S:.0f} s"
                    ) from None
                try:
                    probes.append(lc.read_probe(option, text, launcher.python_cmd(), proc.returncode, said))
                except lc.LauncherRefused as exc:
                    raise AbError(str(exc)) from None
        finally:
            for *_, proc in started:
                if proc.poll() is None:
                    end_tree(proc)
    (a_option, _, _), (b_option, b_text, _) = sides
    try:
        lc.same_devices(a_option, probes[0], b_option, b_text, probes[1])
    except lc.LauncherRefused as exc:
        raise AbError(str(exc)) from None


def run_ab(args: argparse.Namespace) -> int:
    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    try:
        check_command(command)
        a = parse_launcher("--a", args.a, args.label_a)
        b = parse_launcher("--b", args.b, args.label_b)
        # no secret shown or stored past here (issue 56): the launchers hold the real settings
        args.a, args.b = redact_launcher(args.a), redact_launcher(args.b)
        for launcher in (a, b):
            try:
                fork_server.start_mode({**os.environ, **launcher.env})
                warm_rank.start_mode({**os.environ, **launcher.env})
            except ValueError as exc:
                raise AbError(str(exc)) from None
        if args.budget is not None and args.runs:
            raise AbError(
                f"--budget needs --runs auto (--runs {args.runs} runs that many pairs whatever the time)"
            )
        out = (
            Path(args.out)
            if args.out
            else Path(".aorta") / "ab" / datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        )
        if out.exists() and any(out.iterdir()):
            raise AbError(
                f"--out {out}: not empty; give a new folder (the runs of an earlier A/B are kept there)"
            )
        verdict = (
            out / "verdict.json"
            if args.verdict_json is None
            else (Path(args.verdict_json) if args.verdict_json else None)
        )
        if verdict is not None and verdict.parent != out:
            check_output_file("--verdict-json", verdict)
        for option, place in (
            ("--markdown", args.markdown),
            ("$GITHUB_STEP_SUMMARY", os.environ.get("GITHUB_STEP_SUMMARY")),
        ):
            if verdict is not None and place:  # the default verdict place is known only now
                check_not_another_output(option, place, {"--verdict-json": verdict})
        check_launchers([("--a", args.a, a), ("--b", args.b, b)])  # last: it starts each side's Python
    except (AbError, OutputPathError) as exc:
        print(f"aorta ab: {exc}", file=sys.stderr)
        return EXIT_USAGE
    out.mkdir(parents=True, exist_ok=True)
    auto = args.runs == 0
    budget_s = args.budget or parse_budget("--budget", DEFAULT_BUDGET)
    settings = settings_from(args, looks=len(LOOKS) if auto else 1)
    docs: dict[str, list[Path]] = {"A": [], "B": [], "Acheck": [], "Bcheck": []}
    walls: list[RunWall] = []
    t0 = time.monotonic()
    start = _pair_runner(a, b, command, out, docs, walls)
    print(f"aorta ab: A = {args.a!r}, B = {args.b!r}; runs in {out}", flush=True)
    keys, priors = _check_records(args, command)
    try:
        outcome = run_auto(
            start,
            Budget(budget_s if auto else float("inf"), max_runs=LOOKS[-1] if auto else args.runs),
            judge=lambda full, restricted: _judge(args, a, b, docs, settings),
            looks=LOOKS if auto else (args.runs,),
            both_sides=True,
            say=lambda line: print(f"aorta ab: {line}", flush=True),
            prior=priors.get("A"),
            vouches=_vouches(priors, docs),
        )
    finally:
        fork_server.close_servers()  # the sides' servers end with the runs
    _keep_check_records(keys, outcome, out)
    return _finish(args, outcome, out, verdict, wall_report(walls, time.monotonic() - t0))


def _finish(args, outcome: AutoOutcome, out: Path, verdict: Path | None, walls=None) -> int:
    for line in outcome.looks:
        print(f"aorta ab: {line}")
    failed = outcome.failed
    if failed is not None:
        print(
            f"aorta ab: {failed.label} failed (exit {failed.exit_code}): no verdict; its output: {failed.log_path}"
        )
        print(f"aorta ab: exit {failed.exit_code}")
        return failed.exit_code
    comp = outcome.comparison
    assert comp is not None
    code = overall_exit([comp])
    for line in terminal_lines(comp, verbose=args.verbose):
        print(line)
    print(time_line(outcome).replace("aorta gate: auto:", "aorta ab:"))
    for line in walls.lines("aorta ab") if walls is not None else []:
        print(line)
    try:
        for line in write_outputs(
            [comp],
            code,
            verdict_json=verdict,
            markdown_path=args.markdown,
            budget=walls.as_dict() if walls is not None else None,
        ):
            print(line)
    except OSError as exc:
        print(f"aorta ab: could not write the verdict files: {exc}", file=sys.stderr)
        return EXIT_WRITE_FAILED  # the runs were made and kept: an output lost, not a bad input (issue 65)
    print(f"aorta ab: exit {code}")
    return code
