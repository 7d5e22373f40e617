"""A bounded rendezvous for ``aorta torchrun`` across nodes (issue 38, case 22).

torchrun waits ``join_timeout`` (600 s by default) for every launcher of ``--nnodes N`` to join, in silence,
then ends with a bare ``RendezvousTimeoutError``; launchers that disagree on ``--nnodes`` wait as long and the
mismatch is never named. ``aorta torchrun`` takes ``--aorta-rdzv-timeout SECONDS`` (default
``DEFAULT_TIMEOUT_S``) before ``-m pytest``, passes it to torchrun as ``--rdzv-conf join_timeout=SECONDS`` (where
the user gave no ``join_timeout`` of their own), says up front how long it will wait, and says what is missing
when the rendezvous did not complete.
"""

from __future__ import annotations

from collections.abc import Sequence

OPTION = "--aorta-rdzv-timeout"
DEFAULT_TIMEOUT_S = 120.0
MAX_TIMEOUT_S = 86400.0


def _value(args: Sequence[str], names: Sequence[str]) -> str | None:
    for i, a in enumerate(args):
        for n in names:
            if a == n and i + 1 < len(args):
                return args[i + 1]
            if a.startswith(n + "="):
                return a.split("=", 1)[1]
    return None


def parse_timeout(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= MAX_TIMEOUT_S:
        raise ValueError(f"{OPTION}={text!r}: give seconds > 0 and at most {MAX_TIMEOUT_S:g} (a day)")
    return value


def take_option(args: Sequence[str]) -> tuple[list[str], float | None]:
    """``args`` (torchrun's, before ``-m pytest``) less ``--aorta-rdzv-timeout S``, and S (None: not given).
    ``ValueError`` names a bad value."""
    out: list[str] = []
    given: float | None = None
    it = iter(range(len(args)))
    for i in it:
        a = args[i]
        if a == OPTION:
            if i + 1 >= len(args):
                raise ValueError(f"{OPTION}: give seconds, e.g. {OPTION} 120")
            given = parse_timeout(args[i + 1])
            next(it, None)
        elif a.startswith(OPTION + "="):
            given = parse_timeout(a.split("=", 1)[1])
        else:
            out.append(a)
    return out, given


def nodes(args: Sequence[str]) -> str | None:
    """torchrun's ``--nnodes`` as given (``2``, ``1:4``), or None."""
    return _value(args, ("--nnodes",))


def bounded(args: Sequence[str], timeout_s: float) -> tuple[list[str], float | None]:
    """torchrun's arguments with ``join_timeout`` set where several nodes join and none was given; (the
    arguments, the timeout in force, None where torchrun waits for no other node or the user set it)."""
    n = nodes(args)
    if n is None or n in ("1", "1:1") or "--standalone" in args:
        return list(args), None
    conf = _value(args, ("--rdzv-conf", "--rdzv_conf"))
    if conf and "join_timeout" in conf:
        return list(args), None
    extra = f"join_timeout={timeout_s:g}"
    if conf is None:
        return [f"--rdzv-conf={extra}", *args], timeout_s
    out: list[str] = []
    for a in args:  # add to the user's own --rdzv-conf (torchrun reads one)
        if a.startswith(("--rdzv-conf=", "--rdzv_conf=")):
            a = f"{a},{extra}"
        elif out and out[-1] in ("--rdzv-conf", "--rdzv_conf") and a == conf:
            a = f"{a},{extra}"
        out.append(a)
    return out, timeout_s


def waiting_line(args: Sequence[str], timeout_s: float) -> str:
    return (
        f"aorta torchrun: waiting at most {timeout_s:g} s for the launchers of --nnodes {nodes(args)} to join "
        f"({OPTION} to change it)"
    )


def missing_line(args: Sequence[str], timeout_s: float) -> str:
    return (
        f"aorta torchrun: the rendezvous did not complete in {timeout_s:g} s: fewer launchers than --nnodes "
        f"{nodes(args)} joined, or the launchers disagree on --nnodes (each must give the same "
        "--nnodes, --rdzv-endpoint and --rdzv-id); start the missing ones, or raise " + OPTION
    )
