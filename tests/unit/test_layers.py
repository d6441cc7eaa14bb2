"""Import layering (docs/architecture.md "Layers"): imports only go down, schedule and hardware
never import each other, and simpy / networkx / matplotlib stay in their layers.

Order, top first: cli/commands > simulation > report | calibration | sweep > replay > costs >
schedule | hardware > config > units | errors | files | vocabulary. Every ``import`` in every module under
simulator/ is read with ``ast`` (including ones inside functions), relative imports resolved.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Mapping
from functools import cache
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "simulator"

RANK = {
    "units": 0, "errors": 0, "files": 0, "vocabulary": 0,
    "config": 1,
    "schedule": 2, "hardware": 2,
    "costs": 3,
    "replay": 4,
    "report": 5, "calibration": 5, "sweep": 5,
    "simulation": 6,
    "measure": 6,  # the torchrun measurement harness: an entry point beside simulate, used by commands
    "measure_kernels": 6,  # the GEMM / attention timing harness: an entry point beside measure
    "e2e_validation": 6,  # runs published plans through simulate and scores them: beside simulate
    "cli": 7, "commands": 7, "__main__": 7,
}


def _modules() -> list[Path]:
    return sorted(p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts)


@cache  # read once for the file's tests (each of them reads every module)
def _imports(path: Path) -> tuple[str, ...]:
    """Absolute dotted names imported by a module (``from a import b`` gives ``a.b`` as well)."""
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    package = parts[:-1] if parts[-1] != "__init__" else parts[:-1]
    out: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.append(mod)
            out += [f"{mod}.{a.name}" for a in node.names]
    return tuple(out)


def _layer(dotted: str) -> str | None:
    parts = dotted.split(".")
    if parts[0] != "simulator" or len(parts) < 2:
        return None
    return parts[1]


def _own_layer(path: Path) -> str | None:
    rel = path.relative_to(PKG)
    return rel.parts[0].removesuffix(".py") if rel.parts[0] != "__init__.py" else None


def test_the_walker_sees_the_package():
    names = {p.relative_to(PKG).as_posix() for p in _modules()}
    assert {"units.py", "errors.py", "config/hardware.py", "hardware/topology.py", "replay/links.py"} <= names
    assert "simulator.errors" in _imports(PKG / "hardware" / "topology.py")
    assert "numpy" in _imports(PKG / "replay" / "links.py")


@pytest.mark.parametrize("path", _modules(), ids=lambda p: p.relative_to(PKG).as_posix())
def test_imports_only_go_down(path: Path):
    own = _own_layer(path)
    if own is None or own not in RANK:
        return
    for name in _imports(path):
        layer = _layer(name)
        if layer is None or layer not in RANK or layer == own:
            continue
        assert RANK[layer] <= RANK[own], f"{path.relative_to(PKG)} ({own}) imports {name} from the higher layer {layer}"
        if {own, layer} == {"schedule", "hardware"}:
            pytest.fail(f"{path.relative_to(PKG)}: schedule and hardware must not import each other ({name})")


def test_unknown_top_level_modules_are_placed_in_a_layer():
    tops = {_own_layer(p) for p in _modules()} - {None}
    assert tops <= set(RANK), f"add these to the layer table: {sorted(tops - set(RANK))}"


def test_no_module_picks_a_matplotlib_backend_or_uses_pyplot():
    """A backend chosen at import replaces a notebook's inline backend (its figures vanish);
    plots use the object API (report/figures.py)."""
    assert _third_party_users("matplotlib.pyplot") == []
    for path in _modules():
        assert "matplotlib.use(" not in path.read_text(), path


def _third_party_users(library: str) -> list[str]:
    return [p.relative_to(PKG).as_posix() for p in _modules()
            if any(n == library or n.startswith(library + ".") for n in _imports(p))]


def test_simpy_only_under_replay():
    assert all(p.startswith("replay/") for p in _third_party_users("simpy")), _third_party_users("simpy")


def test_networkx_only_under_hardware():
    assert all(p.startswith("hardware/") for p in _third_party_users("networkx")), _third_party_users("networkx")


def test_matplotlib_only_in_report_plots_or_calibration():
    users = _third_party_users("matplotlib")
    # figures: the Figure class all plots share; compare_plots: the compare/sweep charts
    allowed = {"report/figures.py", "report/plots.py", "report/compare_plots.py"}
    assert all(p in allowed or p.startswith("calibration/") for p in users), users


def _module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_imports(path: Path, modules: set[str]) -> set[str]:
    """The modules of ``modules`` a module imports when it runs, wherever the import statement
    is (module level or inside a function: a lazy import is a dependency too), except under
    ``if TYPE_CHECKING:``. ``from package import module`` depends on that module."""
    rel = path.relative_to(PKG.parent).with_suffix("")
    package = list(rel.parts)[:-1]
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else [])) \
                if node.level else (node.module or "")
            subs = {f"{base}.{a.name}" for a in node.names} & modules
            out.update(subs)
            if len(subs) < len(node.names) and base in modules:
                out.add(base)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(), filename=str(path)))
    return out


@cache  # built once for the two tests that read it
def _package_import_graph() -> dict[str, frozenset[str]]:
    """Module -> the modules of the same package (``simulator.costs.*``) it imports."""
    paths = {_module_name(p): p for p in _modules()}
    graph: dict[str, frozenset[str]] = {}
    for name, path in paths.items():
        pkg = name.split(".")[:2]
        graph[name] = frozenset(d for d in _runtime_imports(path, set(paths)) if d != name and d.split(".")[:2] == pkg)
    return graph


def _cycles(graph: Mapping[str, Collection[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan 1972)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def test_the_cycle_finder_finds_cycles():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
    graph = _package_import_graph()
    assert "simulator.hardware.routes" in graph["simulator.hardware.topology"]
    assert "simulator.sweep.executors" in graph["simulator.sweep.run"]  # imported inside a function
    assert "simulator.sweep" not in graph["simulator.sweep.run"]  # from simulator.sweep import executors


def test_no_import_cycles_inside_a_package():
    """Modules of one package depend on each other one way (docs/architecture.md): two modules
    that import each other (even lazily, inside a function) are one unit in disguise, and their
    import order starts to matter."""
    assert _cycles(_package_import_graph()) == []
