"""The architecture is the folder tree (issue 28): each layer imports only itself and the layers before it,
and the top level holds the entry points and little else.

The layers, in order (aorta/__init__.py draws the map): a module of layer ``i`` may import any module of
layers ``0..i``; an import of a later layer is an error unless ``EXCEPTIONS`` names it with its reason. Every
import counts, a lazy one inside a function too: it runs all the same, only later. Modules are parsed, not
imported, so the test needs no torch and no GPU.

Between top-level packages the rule is stricter (issue 66): no import to a later layer (no ``EXCEPTIONS``), an
import between two packages of one layer only along an edge ``SIDE_BY_SIDE`` names with its reason, and no circle
between packages.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
AORTA = REPO / "aorta"

LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "stats",
        "record",
        "exit_codes",
    ),  # pure: numbers in, numbers out (noise estimates too); what goes to disk and
    # how it is read back (a run's samples and machine too); every exit code
    ("timeline",),  # profiler capture and the trace read into per-round figures
    ("device",),  # the one place accelerator calls go
    ("timing",),  # the one timing loop
    ("hw_queue", "fsdp"),  # the two suites
    ("telemetry",),  # what the GPU's clocks and power did while a benchmark ran
    ("environment",),  # machine info (through device and telemetry), versions, fingerprint
    ("plugin", "options", "hookspec"),  # the pytest entry point and its options
    ("processes",),  # the processes aorta starts, forks and locks against: shared by gate, launch and sweep
    ("gate", "report", "sweep", "launch", "history"),  # what runs over saved runs, and the launchers
    ("cli", "__main__"),  # ``aorta <command>``
)
TOP_LEVEL_MODULES = {"__init__", "__main__", "cli", "plugin", "hookspec", "options", "exit_codes"}

# Constants every layer reads: they import nothing of aorta (checked below).
CONSTANTS = ("aorta.exit_codes",)

# Imports of a later layer that today's code still makes: (importer, imported) -> why. The list only shrinks:
# an entry whose import is gone fails ``test_every_exception_is_still_needed``.
# Plugins of an earlier layer reach later ones through the declared seams instead (aorta/hookspec.py).
EXCEPTIONS: dict[tuple[str, str], str] = {}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _exists(name: str) -> bool:
    path = REPO.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


@functools.cache
def _import_nodes(path: Path) -> tuple[ast.Import | ast.ImportFrom, ...]:
    """Every import statement of ``path``, parsed once per process for the tests that read them."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return tuple(node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom))


def _imports(path: Path, roots: tuple[str, ...] = ("aorta",)) -> set[str]:
    """The modules of ``roots`` that ``path`` imports: ``from aorta.x import y`` names ``aorta.x.y`` where that
    is a module. Every import counts: lazy ones, and those under ``TYPE_CHECKING`` (a circle all the same)."""
    found: set[str] = set()
    for node in _import_nodes(path):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] in roots)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in roots:
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


@functools.cache
def _edges() -> frozenset[tuple[str, str]]:
    """(importer, imported) for every import in aorta: parsed once, when a test first asks (not while every
    xdist worker collects the tests, half a second each)."""
    return frozenset((name, imported) for name, path in MODULES.items() for imported in _imports(path))


def _later_layer_imports() -> set[tuple[str, str]]:
    found = set()
    for importer, imported in _edges():
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


def _circles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """The strongly connected groups of two modules or more (Tarjan's algorithm): each is an import circle."""
    graph: dict[str, list[str]] = {}
    for a, b in sorted(edges):
        graph.setdefault(a, []).append(b)
        graph.setdefault(b, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


SCRIPTS = REPO / "scripts"
SCRIPT_MODULES = {_module_name(p): p for p in sorted(SCRIPTS.rglob("*.py"))}


def test_the_circle_finder_finds_circles():
    assert _circles({("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "d")}) == [["a", "b", "c"]]
    assert _circles({("a", "b"), ("b", "c")}) == []


@pytest.mark.parametrize("tree", ["aorta", "scripts"])
def test_no_import_circles(tree):
    """No module reaches itself through its imports (lazy and ``TYPE_CHECKING`` ones included): a circle makes
    two modules one, whose order of import decides what works. ``scripts/`` imports aorta and itself."""
    modules = MODULES if tree == "aorta" else SCRIPT_MODULES
    edges = {
        (name, imported)
        for name, path in modules.items()
        for imported in _imports(path, ("aorta", "scripts"))
        if imported in modules
    }
    assert _circles(edges) == [], (
        f"import circles in {tree}/ (move what both need below both): {_circles(edges)}"
    )


# Packages of one layer sit side by side: none is before another, so an import between two of them is one of
# these edges, each with why and the only modules of the imported package it may reach (a module, or a room and
# what lies below it); any other import between two packages of one layer is an error. In particular gate, launch,
# sweep and history import none of the others for a process: what they share lies below them (aorta/processes).
# The list only shrinks: an edge no import makes any more fails ``test_every_side_by_side_edge_is_still_needed``.
SIDE_BY_SIDE: dict[tuple[str, str], tuple[tuple[str, ...], str]] = {
    ("record", "stats"): (("aorta.stats",), "a record's figures are summarised with the pure statistics"),
    ("hookspec", "options"): (("aorta.options",), "a hook's signature names the parsed options"),
    ("plugin", "hookspec"): (("aorta.hookspec",), "the registrar registers the hooks declared there"),
    ("plugin", "options"): (("aorta.options",), "the registrar parses the options, once"),
    ("report", "gate"): (
        ("aorta.gate.causes", "aorta.gate.comparison"),
        "the report shows the gate's verdicts over two saved runs and why each moved: never its runs or session",
    ),
    ("report", "sweep"): (
        ("aorta.sweep.manifest", "aorta.sweep.grid", "aorta.sweep.knob_check", "aorta.sweep.knob_evidence"),
        "the report reads a sweep's folder as the sweep wrote it (its manifest and grid, knobs.json)",
    ),
    ("sweep", "gate"): (
        ("aorta.gate.causes",),
        "a knob took effect where the kernels changed between cells, read as the gate's causes read them",
    ),
    ("__main__", "cli"): (("aorta.cli",), "``python -m aorta`` is ``aorta``"),
}


def _package(name: str) -> str | None:
    """The top-level package (or top-level module) of ``name``; None for ``aorta`` itself."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else None


def _reaches(imported: str, allowed: tuple[str, ...]) -> bool:
    return any(imported == a or imported.startswith(a + ".") for a in allowed)


def _package_edges(edges) -> set[tuple[str, str]]:
    """(importer's package, imported package) for every import between two of aorta's top-level packages."""
    found = set()
    for a, b in edges:
        pa, pb = _package(a), _package(b)
        if pa is not None and pb is not None and pa != pb:
            found.add((pa, pb))
    return found


def _wrong_package_imports(edges) -> list[tuple[str, str, str]]:
    """The imports that go up between top-level packages, each with why: to a later layer, or to a package of the
    same layer that ``SIDE_BY_SIDE`` does not name (or names, but not the module reached). ``EXCEPTIONS`` does
    not count here: between packages there are none."""
    wrong = []
    for a, b in sorted(edges):
        pa, pb = _package(a), _package(b)
        if pa is None or pb is None or pa == pb:
            continue
        la, lb = _layer(a), _layer(b)
        assert la is not None and lb is not None
        if lb > la:
            wrong.append((a, b, f"{pb} is a later layer than {pa}"))
        elif lb == la and (pa, pb) not in SIDE_BY_SIDE:
            wrong.append((a, b, f"{pa} and {pb} sit side by side and SIDE_BY_SIDE names no {pa} -> {pb}"))
        elif lb == la and not _reaches(b, SIDE_BY_SIDE[(pa, pb)][0]):
            wrong.append((a, b, f"{pa} -> {pb} may reach only {', '.join(SIDE_BY_SIDE[(pa, pb)][0])}"))
    return wrong


def test_between_packages_no_import_goes_up():
    """Between aorta's top-level packages every import goes down the layers, or along ``SIDE_BY_SIDE``: launch
    imports no gate, the gate no launch, the sweep nothing of the gate's runs (issue 66)."""
    wrong = _wrong_package_imports(_edges())
    assert wrong == [], (
        "imports up between packages (move what both need below both: aorta/processes for a process):\n"
        + "\n".join(f"  {a} -> {b}: {why}" for a, b, why in wrong)
    )


def test_every_side_by_side_edge_is_still_needed():
    stale = sorted(set(SIDE_BY_SIDE) - _package_edges(_edges()))
    assert stale == [], f"these SIDE_BY_SIDE edges no import makes any more; remove them: {stale}"


def test_no_circles_between_packages():
    """No top-level package reaches itself through another's imports: modules may be free of circles while their
    packages are not (gate -> launch -> gate, each through another module), and then neither package can be read,
    moved or replaced alone."""
    circles = _circles(_package_edges(_edges()))
    assert circles == [], f"circles between aorta's packages: {circles}"


def test_the_package_checks_see_a_realistic_violation():
    """The checks above on imports that once were real: launch importing the gate's process pieces (the warm
    ranks, before aorta/processes), the gate importing launch back, the sweep reaching the gate's runs."""
    up = {
        ("aorta.launch.torchrun", "aorta.gate.runs.fresh_runs"),
        ("aorta.gate.session.options", "aorta.launch.torchrun"),
        ("aorta.sweep.runner", "aorta.gate.runs.fresh_runs"),
        ("aorta.processes.child_process", "aorta.gate.runs.fresh_runs"),
    }
    allowed = {
        ("aorta.sweep.knob_evidence", "aorta.gate.causes.kernel_diff"),
        ("aorta.gate.cli", "aorta.record"),
    }
    assert [(a, b) for a, b, _ in _wrong_package_imports(up | allowed)] == sorted(up)
    assert _circles(_package_edges(up)) == [["gate", "launch"]]


def test_the_gate_and_the_history_import_neither_the_other():
    """The gate and the run history are one layer, side by side: what both need (noise estimates, a run's
    samples and machine, exit codes) lives below both (aorta/stats, aorta/record, aorta/exit_codes.py); the
    gate asks the history for a stack's runs through a hook (``pytest_aorta_history_baseline``)."""
    wrong = sorted(
        (a, b)
        for a, b in _edges()
        if {a.split(".")[1], b.split(".")[1] if "." in b else ""} == {"gate", "history"}
    )
    assert wrong == [], f"the gate and the history import each other: {wrong}"


def _extra_info_writes(path: Path) -> list[int]:
    """Lines of ``path`` that write an ``extra_info`` themselves: an item set, or a call that changes it."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for t in targets:
            if (
                isinstance(t, ast.Subscript)
                and isinstance(t.value, ast.Attribute)
                and t.value.attr == "extra_info"
            ):
                lines.append(t.lineno)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("update", "setdefault", "pop", "clear")
            and isinstance(node.func.value, ast.Attribute)
            and node.func.value.attr == "extra_info"
        ):
            lines.append(node.lineno)
    return sorted(lines)


def test_benchmarks_write_their_record_through_aorta_record():
    """A benchmark's ``extra_info`` is the run record written out (``aorta.record.write_record``); a benchmark
    that adds details after its run adds them to the record (``with_details``), never to ``extra_info``."""
    wrong = [
        f"{path.relative_to(REPO)}:{n}"
        for path in sorted((REPO / "benchmarks").rglob("*.py"))
        for n in _extra_info_writes(path)
    ]
    assert wrong == [], f"benchmarks writing extra_info themselves: {wrong}"


def test_the_extra_info_check_sees_a_write(tmp_path):
    bench = tmp_path / "test_x.py"
    bench.write_text(
        "def test(benchmark):\n    benchmark.extra_info['a'] = 1\n    benchmark.extra_info.update(b=2)\n"
    )
    assert _extra_info_writes(bench) == [2, 3]


# The gate's rooms, in the order a run's data flows through them (aorta/gate/__init__.py draws the map): a
# room imports only itself and the rooms before it; the modules at the gate's top (the pytest plugin, the
# CLIs) import any room, and no room imports them. The same rule as between packages, inside the gate.
GATE_LAYERS = ("runs", "stats", "verdicts", "causes", "comparison", "baselines", "outputs", "session")
GATE_TOP = {"__init__", "plugin", "cli", "ab_cli", "noise_cli"}


def _gate_room(name: str) -> int | None:
    """The place of a gate module's room in ``GATE_LAYERS``; None for a module at the gate's top."""
    parts = name.split(".")
    if len(parts) < 4:
        return None
    assert parts[2] in GATE_LAYERS, f"{name}: no room; place aorta/gate/{parts[2]}/ in GATE_LAYERS"
    return GATE_LAYERS.index(parts[2])


def test_inside_the_gate_a_room_imports_only_the_rooms_before_it():
    wrong = []
    for a, b in _edges():
        if a.split(".")[:2] != ["aorta", "gate"] or b.split(".")[:2] != ["aorta", "gate"]:
            continue
        ra, rb = _gate_room(a), _gate_room(b)
        if ra is not None and (rb is None or rb > ra):
            wrong.append((a, b))
    assert sorted(wrong) == [], "gate modules importing a later room, or the gate's top:\n" + "\n".join(
        f"  {a} -> {b}" for a, b in sorted(wrong)
    )


def test_the_gate_is_its_rooms_and_its_top():
    rooms = {p.parent.name for p in (AORTA / "gate").glob("*/__init__.py")}
    assert rooms == set(GATE_LAYERS), f"rooms and GATE_LAYERS differ: {sorted(rooms ^ set(GATE_LAYERS))}"
    top = {p.stem for p in (AORTA / "gate").glob("*.py")}
    assert top <= GATE_TOP, f"modules at the gate's top that are no entry point: {sorted(top - GATE_TOP)}"
    doc = (AORTA / "gate" / "__init__.py").read_text(encoding="utf-8")
    missing = [r for r in GATE_LAYERS if f"``{r}/``" not in doc]
    assert missing == [], f"aorta/gate/__init__.py's map leaves out {missing}"
    for room in GATE_LAYERS:
        first = (AORTA / "gate" / room / "__init__.py").read_text(encoding="utf-8").strip()
        assert first.startswith('"""') and "\n" not in first, (
            f"gate/{room}/__init__.py: a one-line docstring of its job"
        )


def test_no_module_imports_the_registrar():
    """``aorta.plugin`` is the entry point only: the other plugins reach it through the hooks of
    aorta/hookspec.py (``config.hook.pytest_aorta_*``), whichever layer they sit in."""
    importers = sorted(name for name, imported in _edges() if imported == "aorta.plugin")
    assert importers == [], (
        f"these modules import aorta.plugin; call a hook of aorta/hookspec.py instead: {importers}"
    )


def test_the_constants_import_nothing_of_aorta():
    for name in CONSTANTS:
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
