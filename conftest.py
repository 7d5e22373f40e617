# Registers aorta's plugin for runs from a checkout where aorta is not pip-installed
# (when it is, the pytest11 entry point has already registered it).
import importlib.metadata as _md

try:
    _installed = any(ep.value == "aorta.plugin" for ep in _md.entry_points(group="pytest11"))
except Exception:  # pragma: no cover
    _installed = False

pytest_plugins = [] if _installed else ["aorta.plugin"]
