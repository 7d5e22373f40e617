"""The architecture is the folder tree (issue 28): each layer imports only itself and the layers before it,
and the top level holds the entry points and little else.

The layers, in order (aorta/__init__.py draws the map): a module of layer ``i`` may import any module of
layers ``0..i``; an import of a later layer is an error unless ``EXCEPTIONS`` names it with its reason. Every
import counts, a lazy one inside a function too: it runs all the same, only later. Modules are parsed, not
imported, so the test needs no torch and no GPU.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
AORTA = REPO / "aorta"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("stats", "record"),  # pure: numbers in, numbers out; what goes to disk and how it is read back
    ("timeline",),  # profiler capture and the trace read into per-round figures
    ("device",),  # the one place accelerator calls go
    ("timing",),  # the one timing loop
    ("hw_queue", "fsdp"),  # the two suites
    ("telemetry",),  # what the GPU's clocks and power did while a benchmark ran
    ("environment",),  # machine info (through device and telemetry), versions, fingerprint
    ("plugin", "options", "hookspec"),  # the pytest entry point and its options
    ("gate", "report", "sweep", "launch", "history"),  # what runs over saved runs, and the launchers
    ("cli", "__main__"),  # ``aorta <command>``
)
TOP_LEVEL_MODULES = {"__init__", "__main__", "cli", "plugin", "hookspec", "options", "stats"}

# Modules every layer may import: constants only, importing nothing of aorta (checked below).
EVERYWHERE = {
    "aorta.gate.exit_codes": "every exit code in one place; the plugin and the FSDP interrupt guard give some too",
}

# Imports of a later layer that today's code still makes: (importer, imported) -> why. The list only shrinks:
# an entry whose import is gone fails ``test_every_exception_is_still_needed``.
# Plugins of an earlier layer reach later ones through the declared seams instead (aorta/hookspec.py).
EXCEPTIONS: dict[tuple[str, str], str] = {
    (
        "aorta.fsdp.plugin",
        "aorta.gate.compare",
    ): "--aorta-test-comm-ballast reuses the gate's parse_positive_ratio "
    "converter; the parse_* converters are to share one convention and one home",
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _exists(name: str) -> bool:
    path = REPO.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _imports(path: Path) -> set[str]:
    """The aorta modules ``path`` imports: ``from aorta.x import y`` names ``aorta.x.y`` where that is a module."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "aorta")
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "aorta":
            assert node.level == 0, f"{path}: relative import; aorta imports by absolute name"
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                found.add(full if _exists(full) else node.module)
    return found


def _layer(name: str) -> int | None:
    parts = name.split(".")
    if len(parts) == 1:
        return None  # ``import aorta``: the package's own __init__, which imports nothing
    for i, names in enumerate(LAYERS):
        if parts[1] in names:
            return i
    raise AssertionError(f"{name}: no layer; place its package in LAYERS (and in aorta/__init__.py's map)")


MODULES = {_module_name(p): p for p in sorted(AORTA.rglob("*.py"))}
EDGES = {(name, imported) for name, path in MODULES.items() for imported in _imports(path)}


def _later_layer_imports() -> set[tuple[str, str]]:
    found = set()
    for importer, imported in EDGES:
        if imported in EVERYWHERE:
            continue
        a, b = _layer(importer), _layer(imported)
        if a is not None and b is not None and b > a:
            found.add((importer, imported))
    return found


def test_no_module_imports_a_later_layer():
    wrong = sorted(_later_layer_imports() - set(EXCEPTIONS))
    assert wrong == [], (
        "imports of a later layer (move the helper down, or list it in EXCEPTIONS with why):\n"
        + ("\n".join(f"  {a} -> {b}" for a, b in wrong))
    )


def test_every_exception_is_still_needed():
    stale = sorted(set(EXCEPTIONS) - _later_layer_imports())
    assert stale == [], f"these exceptions no longer occur; remove them from EXCEPTIONS: {stale}"


def test_no_module_imports_the_registrar():
    """``aorta.plugin`` is the entry point only: the other plugins reach it through the hooks of
    aorta/hookspec.py (``config.hook.pytest_aorta_*``), whichever layer they sit in."""
    importers = sorted(name for name, imported in EDGES if imported == "aorta.plugin")
    assert importers == [], (
        f"these modules import aorta.plugin; call a hook of aorta/hookspec.py instead: {importers}"
    )


def test_the_modules_every_layer_may_import_import_nothing_of_aorta():
    for name in EVERYWHERE:
        assert _imports(MODULES[name]) == set(), f"{name} imports aorta modules"


def test_the_device_layer_imports_nothing_of_aorta():
    """``aorta/device`` is the one place accelerator calls go and knows nothing else (its own modules aside): a use of the profiler
    or the timeline is built by its caller around a ``Device`` (``KernelCapture(device)`` in the timing
    loop), so the device can be read, and replaced, on its own. Lazy imports count too."""
    device = {
        name: _imports(path) for name, path in MODULES.items() if name.split(".")[:2] == ["aorta", "device"]
    }
    assert device, "no aorta/device modules found"
    outside = {
        name: {m for m in found if m.split(".")[:2] != ["aorta", "device"]} for name, found in device.items()
    }
    wrong = {name: sorted(found) for name, found in outside.items() if found}
    assert wrong == {}, f"aorta/device imports aorta modules: {wrong}"


def test_the_top_level_holds_only_the_entry_points():
    modules = {p.stem for p in AORTA.glob("*.py")}
    assert modules <= TOP_LEVEL_MODULES, (
        f"top-level modules outside the map: {sorted(modules - TOP_LEVEL_MODULES)}"
    )


def test_every_package_has_a_layer():
    packages = {p.parent.name for p in AORTA.glob("*/__init__.py")}
    placed = {name for names in LAYERS for name in names}
    assert packages <= placed, f"packages with no layer: {sorted(packages - placed)}"


@pytest.mark.parametrize("layer", range(len(LAYERS)), ids=lambda i: "+".join(LAYERS[i]))
def test_every_layer_is_in_the_map(layer):
    """aorta/__init__.py's map names every package of every layer, so the map and the test agree."""
    doc = (AORTA / "__init__.py").read_text(encoding="utf-8")
    for name in LAYERS[layer]:
        if (AORTA / name).is_dir():
            assert f"``{name}/``" in doc, f"aorta/__init__.py's map leaves out {name}/"
