"""How many examples a property test (hypothesis) draws: each test names its full count, ``examples(N)``; the
profile tests/conftest.py loads scales it. ``full`` (the whole run, CI's test command): N. ``fast`` (the fast
tier, ``-m 'not slow'``): a quarter of N, at least 10. ``AORTA_HYPOTHESIS=full`` (or ``fast``) picks one whatever
the markers."""

from __future__ import annotations

from hypothesis import settings

FULL = 100  # the profiles' max_examples, in hundredths of each test's own count: full 100, fast 25
LEAST = 10


def examples(full: int) -> int:
    """The examples of a test whose full count is ``full``, under the profile loaded now."""
    return max(min(LEAST, full), full * settings.default.max_examples // FULL)
