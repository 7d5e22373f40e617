"""One way to print a place that may hold a secret (pure: stdlib only).

Every database URL put in a message, every command line written to a log (``.aorta/runs/*/runN.log``, ``aorta
ab``'s and the proof driver's logs) and every environment kept in a record passes through here (issue 46, class
3). What is hidden, whatever characters the secret holds:

- a URL's password: everything between the first ``:`` of its userinfo and the *last* ``@`` before the host,
  so a password that holds ``@``, ``:`` or ``/`` is hidden whole (``postgresql://ann:p@ss@db/h`` ->
  ``postgresql://ann:***@db/h``);
- ``password=`` (and ``passwd``, ``pwd``, ``sslpassword``, ``token``, ``secret``) in a URL's query or a libpq
  key=value string;
- the value of an environment variable whose name says secret (``PGPASSWORD``, ``*_TOKEN``, ``*_SECRET``,
  ``*_KEY``, ``*_API_KEY``), in a mapping or as a ``NAME=VALUE`` word, quoted or not;
- any text known to be a secret (``secrets``), wherever it appears (a server's error may quote it back).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import unquote

HIDDEN = "***"


class _SecretName:
    """A setting's or option's name that says it holds a secret, word by word (``MYSQL_PWD``, ``AccountKey``,
    ``db-password``, ``NCCL_PASSWORD_TEST``; issue 65: the old pattern missed the first two; 65b: ``SERVICE_CRED``,
    ``DB_PASS``, a last word ``PASS`` or ``PW``). ``PWD`` and
    ``OLDPWD`` alone are the shell's folders, not passwords."""

    WORDS = frozenset(
        "PASSWORD PASSWD PWD PASSPHRASE SECRET SECRETS TOKEN TOKENS KEY APIKEY CREDENTIAL CREDENTIALS AUTH "
        "SIGNATURE SAS CRED CREDS".split()
    )
    NOT = frozenset({"PWD", "OLDPWD"})

    def words(self, name: str) -> list[str]:
        spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", str(name))  # AccountKey -> Account_Key
        return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.upper()) if w]

    def search(self, name: str) -> bool:
        if str(name).upper() in self.NOT:
            return False
        words = self.words(name)
        if words and words[-1] in ("PASS", "PW"):  # DB_PASS, MYSQL_PW (not KERNEL_PASS_ROUNDS: issue 65b)
            return True
        return any(w in self.WORDS or w.endswith(("PASSWORD", "PASSWD", "TOKEN", "SECRET")) for w in words)


SECRET_NAME = _SecretName()
# Settings known to hold no secret: their values are shown (a refusal says which NCCL_* differs), unless the
# name itself says secret (NCCL_PASSWORD_TEST stays hidden).
KNOWN_SETTING = re.compile(
    r"^(NCCL|RCCL|HIP|CUDA|OMP|ROCR|HSA|TORCH|GPU|AMD|NVIDIA|MIOPEN|ROCM|PYTORCH|MKL|KMP|GLOO|MASTER|WORLD|"
    r"LOCAL|RANK|AORTA|PYTEST|PYTHON|LC|LANG|XDG)(_|$)|^(PATH|HOME|USER|LOGNAME|SHELL|TERM|TMPDIR|HOSTNAME|PWD|"
    r"OLDPWD|VIRTUAL_ENV|CI|LD_LIBRARY_PATH|LD_PRELOAD)$|^PYTHON[A-Z]*$"
)
_URL = re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.-]*)://(\S+)")
# a value as the shell reads it: quoted parts and backslash escapes kept whole (issue 65: the tail of a
# password after an escaped space or quote was printed)
_SHELL_VALUE = r"""(?:\\.|'[^']*'|"(?:\\.|[^"\\])*"|[^\s&;#'"\\])*"""
_KEYWORD = re.compile(
    r"(?i)(\b(?:ssl)?(?:password|passwd|pwd)|\btoken|\bsecret|\baccountkey|\bsharedaccesskey|\bsig)(\s*=\s*)("
    + _SHELL_VALUE
    + ")"
)
_ENV_WORD = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)=(" + _SHELL_VALUE + ")")
_OPTION_WORD = re.compile(r"(--?[A-Za-z][A-Za-z0-9_-]*)(=|\s+)(" + _SHELL_VALUE + ")")
MIN_SECRET_CHARS = 3  # a shorter value is not hidden by value (it would hide every "1" in a message)
_REGISTERED: set[str] = set()


def register(*values: str) -> None:
    """Hold ``values`` as secrets for the rest of the process: every ``redact_text`` hides them wherever they
    appear, whatever its caller knew (issue 65: secrets by value, fed from where they enter)."""
    _REGISTERED.update(v for v in values if isinstance(v, str) and len(v) >= MIN_SECRET_CHARS)


def registered() -> frozenset[str]:
    return frozenset(_REGISTERED)


def forget() -> None:
    """Forget every registered secret (a test's clean slate)."""
    _REGISTERED.clear()


def is_secret_setting(name: str) -> bool:
    """A setting (an environment variable, a launcher's assignment) whose value is held as a secret: its name
    says so, or it is no known setting (a value of unknown meaning is never printed)."""
    return SECRET_NAME.search(name) or not KNOWN_SETTING.search(name)


def _unknown_value(name: str, value: str) -> bool:
    """A launcher's ``NAME=VALUE`` whose value is held as a secret though its name does not say so: a setting
    (an upper-case name) that is no known one, with a value long enough to mean something (not a number, not a
    switch)."""
    return (
        bool(re.fullmatch(r"[A-Z_][A-Z0-9_]*", name))
        and is_secret_setting(name)
        and len(value) >= 6
        and not re.fullmatch(r"[0-9.,:-]+|true|false|yes|no|on|off", value, re.IGNORECASE)
    )


def _unquoted(value: str) -> list[str]:
    """A value as written and as the shell gives it to a process (quotes and escapes gone)."""
    try:
        words = shlex.split(value)
    except ValueError:
        words = []
    return [value, " ".join(words)]


# libpq's connection keywords (a "host=h dbname=d user=u password=pw" string, PostgreSQL's documented form)
LIBPQ_KEYWORDS = frozenset(
    "host hostaddr port dbname user password passfile service sslmode sslcert sslkey sslrootcert sslpassword "
    "connect_timeout options application_name target_session_attrs channel_binding gssencmode krbsrvname "
    "require_auth load_balance_hosts".split()
)
_LIBPQ_WORD = re.compile(r"\s*([a-z_]+)\s*=\s*('(?:[^'\\]|\\.)*'|[^\s']*)")


def url_password(url: str) -> str:
    """The password in ``url``'s userinfo ("" if none), decoded as the driver will read it."""
    m = _URL.match(url.strip())
    if not m:
        return ""
    userinfo = _userinfo(m.group(2))
    if userinfo is None or ":" not in userinfo:
        return ""
    return unquote(userinfo.split(":", 1)[1])


def url_secrets(url: str) -> list[str]:
    """The password of ``url`` and the pieces a driver may quote back after splitting it at ``@`` or ``:``
    (``ann:p@ss@db`` read by libpq: host ``ss@db``)."""
    password = url_password(url)
    cuts = [m.start() for m in re.finditer(r"[@:/]", password)]
    pieces = [password[c + 1 :] for c in cuts] + [password[:c] for c in cuts]
    return [password, *(piece for piece in pieces if len(piece) >= 3)]


def _userinfo(rest: str) -> str | None:
    """The userinfo of a URL's part after ``://``: up to its last ``@`` (a password may hold ``@``, ``/`` or
    ``?``; a host never holds ``@``), or None."""
    at = rest.rfind("@")
    return None if at < 0 else rest[:at]


def _url(m: re.Match) -> str:
    scheme, rest = m.group(1), m.group(2)
    userinfo = _userinfo(rest)
    if userinfo is not None and ":" in userinfo:
        rest = f"{userinfo.split(':', 1)[0]}:{HIDDEN}@{rest[len(userinfo) + 1 :]}"
    return f"{scheme}://{rest}"


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every URL password, ``password=`` value, secret-named ``NAME=VALUE`` and each of
    ``secrets`` replaced by ``***``."""
    out = str(text)
    every = {s for s in secrets if s and len(s) >= MIN_SECRET_CHARS} | _REGISTERED
    for secret in sorted(every, key=len, reverse=True):
        out = out.replace(secret, HIDDEN)
    out = _URL.sub(_url, out)
    out = _KEYWORD.sub(
        lambda m: (
            f"{m.group(1)}{m.group(2)}{HIDDEN}"
            if m.group(3) and not _shell_folder(m.group(1), m.group(3))  # PWD=/home/ann is the shell's folder
            else m.group(0)
        ),
        out,
    )
    out = _OPTION_WORD.sub(
        lambda m: (
            f"{m.group(1)}{m.group(2)}{HIDDEN}"
            if SECRET_NAME.search(m.group(1)) and m.group(3) and not m.group(3).startswith("-")
            else m.group(0)
        ),
        out,
    )
    return _ENV_WORD.sub(
        lambda m: f"{m.group(1)}={HIDDEN}" if SECRET_NAME.search(m.group(1)) and m.group(2) else m.group(0),
        out,
    )


def redact_url(url: str) -> str:
    """A database URL as it may be printed: its password, and its own text of it anywhere, hidden."""
    return redact_text(url, url_secrets(url))


def redact_argv(argv: Sequence[str], secrets: Iterable[str] = ()) -> list[str]:
    """A command line as it may be written to a log."""
    words = list(argv)
    found = set(argv_secrets(words)) | set(secrets)
    out = [redact_text(w, found) for w in words]
    for i, word in enumerate(words[:-1]):  # --db-password X: X hidden whole, whatever it holds
        if word.startswith("-") and "=" not in word and SECRET_NAME.search(word) and words[i + 1]:
            out[i + 1] = HIDDEN
    return out


LAUNCHER_OPTIONS = ("--a", "--b")  # aorta ab's: each takes one launcher as one word


def argv_secrets(argv: Sequence[str], launchers: bool = True) -> list[str]:
    """The secrets of a command line: each value of an option whose name says secret (``--db-password X``,
    ``--token=X``), each URL's and connection string's password, each secret setting's value (``NAME=V``), and
    a launcher's given as one word (``--a 'docker run -e PGPASSWORD=pw IMAGE python'``)."""
    words = list(argv)
    found: list[str] = []
    for i, word in enumerate(words):
        option, eq, launcher = word.partition("=")
        if launchers and (i and words[i - 1] in LAUNCHER_OPTIONS or eq and option in LAUNCHER_OPTIONS):
            # a launcher is shell words (``PGPASSWORD=pw /venv/bin/python``): only its settings' values are
            # secret, never the program after them
            found += launcher_secrets(launcher if eq and option in LAUNCHER_OPTIONS else word, nested=True)
            continue
        if launchers and any(c.isspace() for c in word) and libpq_fields(word) is None:
            found += launcher_secrets(word, nested=True)
        name, eq, value = word.partition("=")
        if word.startswith("-") and SECRET_NAME.search(name):
            if eq:
                found += _unquoted(value)
            elif i + 1 < len(words):
                found += _unquoted(words[i + 1])
        elif eq and not word.startswith("-") and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            if SECRET_NAME.search(name):
                found += _unquoted(value)
        found += conninfo_secrets(value if eq else word) + _connection_string_secrets(word)
    return [s for s in found if s and len(s) >= MIN_SECRET_CHARS]


def _shell_folder(name: str, value: str) -> bool:
    """``PWD=/home/ann`` (``OLDPWD=``): the shell's folder, not a password; ``PWD=s3cret`` in an ODBC or ADO
    connection string (``Server=db;UID=ann;PWD=s3cret;``) is one (issue 65b: printed in clear)."""
    return name.strip().upper() in SECRET_NAME.NOT and value.strip("'\"").startswith(("/", "~", "."))


def _connection_key(name: str, value: str) -> bool:
    """A ``Key=Value`` of a connection string whose value is a secret (``AccountKey``, ``Password``, ``PWD``)."""
    return SECRET_NAME.search(name) or (
        name.strip().upper() in SECRET_NAME.NOT and not _shell_folder(name, value)
    )


def _connection_string_secrets(text: str) -> list[str]:
    """Values of secret-named keys in a ``Key=Value;Key=Value`` connection string (Azure's ``AccountKey=``)."""
    found: list[str] = []
    if ";" not in str(text):
        return found
    for part in str(text).split(";"):
        name, eq, value = part.strip().partition("=")
        if eq and value and re.fullmatch(r"[A-Za-z][A-Za-z0-9 _]*", name) and _connection_key(name, value):
            found.append(value)
    return found


def url_secrets_whole(text: str) -> list[str]:
    """A URL given as one value (an option's, a setting's): its password up to the last ``@``, spaces and all
    (issue 65: ``postgresql://ann:pa ss@db/h`` printed ``ss@db``)."""
    m = re.match(r"\s*[a-zA-Z][a-zA-Z0-9+.-]*://(.*)", str(text), re.S)
    if not m:
        return []
    userinfo = _userinfo(m.group(1))
    if userinfo is None or ":" not in userinfo:
        return []
    password = userinfo.split(":", 1)[1]
    return [p for p in {password, unquote(password)} if p]


def register_entered(argv: Sequence[str] = (), environ: Mapping[str, str] | None = None) -> None:
    """Register every secret that enters the process: a command line's (``argv_secrets``, URLs whole) and the
    environment's (``env_secrets``). Called once where a command or a pytest run starts."""
    register(*argv_secrets(argv), *(s for w in argv for s in url_secrets_whole(w.partition("=")[2] or w)))
    if environ is not None:
        register(*env_secrets(environ))


def redact_env(env: Mapping[str, str], secrets: Iterable[str] = ()) -> dict[str, str]:
    """An environment as it may be kept in a record: secret-named variables hidden, the rest redacted."""
    return {k: HIDDEN if SECRET_NAME.search(k) else redact_text(str(v), secrets) for k, v in env.items()}


def env_secrets(env: Mapping[str, str]) -> list[str]:
    """The values of ``env``'s secret-named variables, and the passwords of URLs and connection strings any
    variable holds (to hide wherever they appear)."""
    found = [v for k, v in env.items() if SECRET_NAME.search(k) and len(v) >= 4]
    for value in env.values():
        if "://" in value or "=" in value:
            found += url_secrets_whole(value) + _connection_string_secrets(value)
    return [s for s in found if len(s) >= MIN_SECRET_CHARS]


def libpq_fields(text: str) -> dict[str, str] | None:
    """``text`` read as a libpq key=value connection string (``host=h dbname=d user=u password=pw``): its
    fields, or None where it is not one (a key that is not libpq's, a word that is not key=value)."""
    fields: dict[str, str] = {}
    pos, value = 0, str(text).strip()
    while pos < len(value):
        m = _LIBPQ_WORD.match(value, pos)
        if not m or m.end() == pos or m.group(1) not in LIBPQ_KEYWORDS:
            return None
        raw = m.group(2)
        fields[m.group(1)] = raw[1:-1].replace("\\'", "'") if raw.startswith("'") else raw
        pos = m.end()
    return fields or None


def conninfo_secrets(text: str) -> list[str]:
    """The password of a database URL or a libpq key=value string, and the pieces a driver may quote back."""
    fields = libpq_fields(text)
    if fields is not None:
        return [s for s in (fields.get("password", ""), fields.get("sslpassword", "")) if s]
    return url_secrets(text)


def redact_conninfo(text: str) -> str:
    """A database URL or libpq key=value string as it may be printed."""
    return redact_text(text, conninfo_secrets(text))


def launcher_secrets(text: str, nested: bool = False) -> list[str]:
    """The secrets in a launcher's text (``PGPASSWORD=pw HF_TOKEN=t python``): values of secret-named settings,
    URL and libpq passwords, unquoted as the shell gives them to the process."""
    try:
        words = shlex.split(text or "")
    except ValueError:
        words = str(text or "").split()
    found: list[str] = list(argv_secrets(words, launchers=not nested))
    for word in words:
        name, eq, value = word.partition("=")
        if eq and value and _unknown_value(name, value):
            found.append(value)  # an unknown setting's value is held as a secret too
        found += url_secrets(value if eq else word) + conninfo_secrets(value if eq else word)
    for i, word in enumerate(words[:-1]):  # docker run -e NAME=VALUE / --env NAME=VALUE
        if word in ("-e", "--env"):
            name, eq, value = words[i + 1].partition("=")
            if eq and value and (SECRET_NAME.search(name) or _unknown_value(name, value)):
                found.append(value)
    return [s for s in found if s and len(s) >= MIN_SECRET_CHARS]


def redact_launcher(text: str) -> str:
    """A launcher's text (``aorta ab --a/--b``) as it may be printed or stored: every setting whose name says
    secret, every URL password and every libpq password hidden, as they enter (issue 56)."""
    return redact_text(str(text or ""), launcher_secrets(text))


def hide_registered(text: str) -> str:
    """``text`` with each registered secret hidden (nothing else changed: safe on any output)."""
    out = str(text)
    for secret in sorted(_REGISTERED, key=len, reverse=True):
        out = out.replace(secret, HIDDEN)
    return out


class RedactingStream:
    """A text stream (stdout, stderr) through which every registered secret is hidden as it leaves: the one
    redactor where a command's text goes out, whatever printed it (a refusal, a log line, an exception)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(hide_registered(text) if _REGISTERED else text)
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
