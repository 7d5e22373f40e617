"""A real PostgreSQL server for the history's tests: ``initdb`` and ``pg_ctl`` from PATH (or Debian's
/usr/lib/postgresql/*/bin), a throwaway cluster in a temporary folder, trust auth on 127.0.0.1. The server
refuses to run as root, so as root it runs as ``nobody``. ``start`` returns (url, stop) or raises
``Unavailable`` with the reason the tests skip with."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


class Unavailable(Exception):
    pass


def _binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for path in sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True):
        return path
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start() -> tuple[str, Callable[[], None]]:
    initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
    if not initdb or not pg_ctl:
        raise Unavailable("no PostgreSQL server found (initdb and pg_ctl on PATH or in /usr/lib/postgresql)")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise Unavailable("psycopg 3 is not installed (pip install -e '.[dev]')") from None
    user = None
    folder = Path(tempfile.mkdtemp(prefix="aorta-pg-"))
    if os.geteuid() == 0:
        user = "nobody"
        shutil.chown(folder, user)
    data, port = folder / "data", _free_port()
    run = dict(capture_output=True, text=True, timeout=120, user=user, cwd=folder)
    proc = subprocess.run([initdb, "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"], **run)  # type: ignore[call-overload]
    if proc.returncode != 0:
        raise Unavailable(f"initdb failed: {proc.stderr.strip()[-300:]}")
    opts = f"-p {port} -h 127.0.0.1 -k {folder} -c fsync=off"
    proc = subprocess.run(
        [pg_ctl, "-D", str(data), "-o", opts, "-l", str(folder / "log"), "-w", "start"], **run
    )  # type: ignore[call-overload]
    if proc.returncode != 0:
        log = (folder / "log").read_text(errors="replace")[-300:] if (folder / "log").exists() else ""
        raise Unavailable(f"PostgreSQL did not start: {proc.stderr.strip()[-300:]} {log}")

    def stop() -> None:
        subprocess.run([pg_ctl, "-D", str(data), "-m", "immediate", "stop"], **run)  # type: ignore[call-overload]
        shutil.rmtree(folder, ignore_errors=True)

    url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
    deadline = time.monotonic() + 30
    import psycopg

    while True:
        try:
            psycopg.connect(url).close()
            return url, stop
        except psycopg.Error:
            if time.monotonic() > deadline:
                stop()
                raise Unavailable("PostgreSQL started but took no connection in 30 s") from None
            time.sleep(0.2)
