"""``pytest_plugins`` for a conftest: aorta's plugin, unless the installed entry point registered it already.

When aorta is pip-installed, pytest loads ``aorta.plugin`` through the ``pytest11`` entry point; a
conftest that listed it again would register it twice and stop pytest. Use in a conftest as
``from aorta.registration import pytest_plugins``.
"""

from __future__ import annotations

import importlib.metadata


def _installed() -> bool:
    try:
        return any(ep.value == "aorta.plugin" for ep in importlib.metadata.entry_points(group="pytest11"))
    except Exception:  # broken metadata: fall back to registering it ourselves
        return False


pytest_plugins: list[str] = [] if _installed() else ["aorta.plugin"]
