"""The one fallback registration of aorta's plugin: for runs from a checkout that was never pip-installed.

aorta's plugin is registered by its ``pytest11`` entry point (pyproject.toml), which ``pip install -e .``
(scripts/bootstrap.sh) puts in place; ``aorta.plugin`` then registers its sub-plugins. The GPU machines run
``python3 -m pytest`` from a bare checkout, where no entry point exists: this file registers the same module
under the same name, ``aorta``, exactly when the entry point did not (and not where ``-p no:aorta`` blocks it).
``pytest_addhooks`` runs as this file is registered, before the command line is parsed, so the plugin's
options are known in time.
"""

import pytest


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    import aorta.plugin

    if not pluginmanager.is_registered(aorta.plugin) and not pluginmanager.is_blocked("aorta"):
        pluginmanager.register(aorta.plugin, "aorta")
