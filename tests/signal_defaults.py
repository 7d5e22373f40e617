"""For tests that stop a command with a signal: the child starts with SIGINT, SIGTERM and SIGHUP at their
defaults, as a job of a terminal has them, whatever this test run was started with. A background job of a
non-interactive shell ignores SIGINT, ``nohup`` ignores SIGHUP, and an ignored signal is inherited across exec;
aorta's commands keep a signal that was ignored when they began ignored (as ``nohup`` asks), so without this
such tests hang in a run started that way (seen: the README's test command under ``nohup ... &``)."""

import signal


def default_stop_signals() -> None:
    """``preexec_fn`` of the child: the stop signals at their defaults before it execs."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
