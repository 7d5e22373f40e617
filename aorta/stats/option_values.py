"""The values aorta's options take, parsed with one convention (issue 48): a ratio (``0.03`` or ``3%``), a
positive ratio, a whole number in a range, a significance level. Each refuses a bad value with a ``ValueError``
that names the option, the value and what is allowed; the pytest options and the ``aorta`` subcommands turn it
into their usage error. Pure: text in, numbers out."""

from __future__ import annotations


def parse_ratio(option: str, text: str) -> float:
    """A relative effect: ``0.03`` or ``3%``; 0 to 10 (0% to 1000%)."""
    raw = str(text).strip()
    try:
        value = float(raw[:-1]) / 100.0 if raw.endswith("%") else float(raw)
    except ValueError:
        raise ValueError(
            f"{option}={text!r}: not a number; give a ratio such as 0.03 or a percentage such as 3%"
        ) from None
    if not 0.0 <= value <= 10.0:
        raise ValueError(f"{option}={text!r}: out of range; allowed 0 to 10 (0% to 1000%)")
    return value


def parse_positive_ratio(option: str, text: str, example: str) -> float:
    """A relative effect above 0 (``parse_ratio``'s range otherwise), e.g. ``--aorta-max-mde``."""
    value = parse_ratio(option, text)
    if value <= 0:
        raise ValueError(f"{option}={text!r}: must be above 0 ({example})")
    return value


def parse_whole(option: str, text: str, low: int, high: int | None, what: str) -> int:
    """A whole number from ``low`` to ``high`` (None: no upper end); ``what`` says what it counts."""
    allowed = f"{low} to {high}" if high is not None else f"{low} and up"
    try:
        n = int(text)
    except ValueError:
        raise ValueError(f"{option}={text!r}: give a whole number of {what}, {allowed}") from None
    if n < low or (high is not None and n > high):
        raise ValueError(f"{option}={text!r}: out of range; allowed {allowed}")
    return n


def parse_alpha(text: str) -> float:
    try:
        a = float(text)
    except ValueError:
        raise ValueError(
            f"--aorta-alpha={text!r}: not a number; give a significance level such as 0.01"
        ) from None
    if not 0.0 < a < 1.0:
        raise ValueError(f"--aorta-alpha={text!r}: out of range; allowed strictly between 0 and 1")
    return a
