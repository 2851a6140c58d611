"""The package's layers: no import cycles, and the low layers import nothing above them.

Imports are read with ``ast`` from every module of ``loopcost/``: at module level and inside
functions alike (a function-level import still ties the modules together), except those under
``if TYPE_CHECKING:``, which never run.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "loopcost"


def _module_name(path: Path) -> str:
    parts = ("loopcost",) + path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST, module: str, is_package: bool) -> set[str]:
    """Absolute names of the loopcost modules that ``module`` imports, outside ``if TYPE_CHECKING:``."""
    out: set[str] = set()
    package = module if is_package else module.rpartition(".")[0]

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                base_name = ".".join(base + ([node.module] if node.module else []))
            else:
                base_name = node.module or ""
            out.add(base_name)
            out.update(f"{base_name}.{a.name}" for a in node.names)  # `from . import layout` names a module
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return {m for m in out if m == "loopcost" or m.startswith("loopcost.")}


def module_graph() -> dict[str, set[str]]:
    """Each loopcost module and the loopcost modules it imports (names that are not modules dropped)."""
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        tree = ast.parse(path.read_text(), str(path))
        graph[name] = {m for m in _imports(tree, name, path.name == "__init__.py") if m in files} - {name}
    return graph


def _node(module: str) -> str:
    """The layer of a module: its subpackage (``ir``), or the top-level module itself (``cli``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "loopcost"


def layer_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph contracted to layers, without self-edges."""
    out: dict[str, set[str]] = {}
    for m, deps in graph.items():
        out.setdefault(_node(m), set()).update(_node(d) for d in deps if _node(d) != _node(m))
    return out


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path ``[a, b, ..., a]``, or None if it is acyclic."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def dfs(n: str) -> list[str] | None:
        state[n] = 1
        path.append(n)
        for d in sorted(graph.get(n, ())):
            if state.get(d) == 1:
                return path[path.index(d):] + [d]
            if d not in state and (found := dfs(d)):
                return found
        path.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state and (found := dfs(n)):
            return found
    return None


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return module_graph()


@pytest.fixture(scope="module")
def layers(graph) -> dict[str, set[str]]:
    return layer_graph(graph)


def test_the_graph_is_read(graph, layers):
    assert "loopcost.ir.program" in graph["loopcost.ir.dsl"]
    assert "loopcost.ir.state" in graph["loopcost.codegen.c_source"]
    assert "ir" in layers["transforms"]


def test_no_cycle_between_layers(layers):
    cycle = find_cycle(layers)
    assert cycle is None, f"import cycle between loopcost's layers: {' -> '.join(cycle)}"


def test_no_cycle_inside_ir(graph):
    ir = {m: {d for d in deps if d.startswith("loopcost.ir.")} for m, deps in graph.items()
          if m.startswith("loopcost.ir.")}
    cycle = find_cycle(ir)
    assert cycle is None, f"import cycle inside loopcost.ir: {' -> '.join(cycle)}"


def test_no_cycle_between_modules(graph):
    cycle = find_cycle(graph)
    assert cycle is None, f"import cycle between loopcost's modules: {' -> '.join(cycle)}"


@pytest.mark.parametrize(("layer", "allowed", "forbidden"), [
    ("ir", {"errors", "paths"}, None),
    ("costmodel", None, {"codegen", "runner"}),
    ("transforms", None, {"codegen", "runner", "costmodel"}),
])
def test_layer_imports(layers, layer, allowed, forbidden):
    deps = layers[layer]
    if allowed is not None:
        assert deps <= allowed, f"{layer} imports {sorted(deps - allowed)}; it may import only {sorted(allowed)}"
    if forbidden is not None:
        assert not deps & forbidden, f"{layer} imports {sorted(deps & forbidden)}"
