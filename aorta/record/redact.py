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
from urllib.parse import unquote

HIDDEN = "***"
SECRET_NAME = re.compile(r"(PASS(WORD|WD)?|SECRET|TOKEN|API_?KEY|(^|_)KEY$|CREDENTIAL)", re.IGNORECASE)
_URL = re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.-]*)://(\S+)")
_KEYWORD = re.compile(
    r"(?i)(\b(?:ssl)?(?:password|passwd|pwd)|\btoken|\bsecret)(\s*=\s*)('[^']*'|\"[^\"]*\"|[^\s&;#'\"]+)"
)
_ENV_WORD = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)=('[^']*'|\"[^\"]*\"|[^\s&;#]*)")
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
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        out = out.replace(secret, HIDDEN)
    out = _URL.sub(_url, out)
    out = _KEYWORD.sub(lambda m: f"{m.group(1)}{m.group(2)}{HIDDEN}", out)
    return _ENV_WORD.sub(
        lambda m: f"{m.group(1)}={HIDDEN}" if SECRET_NAME.search(m.group(1)) else m.group(0), out
    )


def redact_url(url: str) -> str:
    """A database URL as it may be printed: its password, and its own text of it anywhere, hidden."""
    return redact_text(url, url_secrets(url))


def redact_argv(argv: Sequence[str], secrets: Iterable[str] = ()) -> list[str]:
    """A command line as it may be written to a log."""
    words = list(argv)
    found = {s for w in words for s in url_secrets(w.split("=", 1)[-1])} | set(secrets)
    return [redact_text(w, found) for w in words]


def redact_env(env: Mapping[str, str], secrets: Iterable[str] = ()) -> dict[str, str]:
    """An environment as it may be kept in a record: secret-named variables hidden, the rest redacted."""
    return {k: HIDDEN if SECRET_NAME.search(k) else redact_text(str(v), secrets) for k, v in env.items()}


def env_secrets(env: Mapping[str, str]) -> list[str]:
    """The values of ``env``'s secret-named variables (to hide wherever they appear)."""
    return [v for k, v in env.items() if SECRET_NAME.search(k) and len(v) >= 4]


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


def launcher_secrets(text: str) -> list[str]:
    """The secrets in a launcher's text (``PGPASSWORD=pw HF_TOKEN=t python``): values of secret-named settings,
    URL and libpq passwords, unquoted as the shell gives them to the process."""
    try:
        words = shlex.split(text or "")
    except ValueError:
        words = str(text or "").split()
    found: list[str] = []
    for word in words:
        name, eq, value = word.partition("=")
        if eq and SECRET_NAME.search(name) and value:
            found.append(value)
        found += url_secrets(value if eq else word) + conninfo_secrets(value if eq else word)
    return [s for s in found if s]


def redact_launcher(text: str) -> str:
    """A launcher's text (``aorta ab --a/--b``) as it may be printed or stored: every setting whose name says
    secret, every URL password and every libpq password hidden, as they enter (issue 56)."""
    return redact_text(str(text or ""), launcher_secrets(text))
