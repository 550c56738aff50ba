"""The import graph of `src/polyembed`: no cycles, and lower layers never import higher ones.

Every import counts, at module level or inside a function (an import inside a function only postpones a
cycle), and so do imports under `if TYPE_CHECKING:` (a cycle in the annotations is still two modules that
need each other). A package's `__init__` importing its own modules is an edge like any other; that importing a
module first runs its parents' `__init__` files is not.
"""

from __future__ import annotations

import ast
from pathlib import Path

SOURCE = Path(__file__).resolve().parent.parent / "src"

LAYERS: dict[str, int] = {
    "errors": 0, "version": 0, "messages": 0,
    "languages": 1, "integrity": 1, "device": 1,
    "outputs": 2, "environment": 2,
    "data": 3,
    "config": 4, "models": 4,
    "alignment": 5, "eval": 5, "methods": 5, "mining": 5, "streaming": 5, "serve": 5,
    "api": 6, "demo": 6, "demo_report": 6, "doctor": 6,
    "__init__": 7, "__main__": 7, "cli": 7, "cli_app": 7, "cli_tools": 7, "cli_models": 7, "cli_train": 7,
}
"""errors, languages -> data -> models -> methods | eval | alignment | mining | streaming | serve -> api -> cli
(the project's layout notes); a module imports its own layer or lower ones only."""


def _modules() -> dict[str, Path]:
    modules = {}
    for file in (SOURCE / "polyembed").rglob("*.py"):
        parts = list(file.relative_to(SOURCE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = file
    return modules


class _Imports(ast.NodeVisitor):
    """The dotted names a file imports (`from a.b import c` gives a.b.c when c is a module, else a.b)."""

    def __init__(self, package: str, modules: set[str]) -> None:
        self.package = package
        self.modules = modules
        self.names: set[str] = set()

    def visit_Import(self, node: ast.Import) -> None:
        self.names.update(alias.name for alias in node.names)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:
            package = self.package
            for _ in range(node.level - 1):
                package = package.rpartition(".")[0]
            base = f"{package}.{base}" if base else package
        for alias in node.names:
            self.names.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in self.modules else base)


def _graph() -> dict[str, set[str]]:
    modules = _modules()

    def owner(name: str) -> str | None:  # the module a dotted name lives in
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, file in modules.items():
        package = module if file.name == "__init__.py" else module.rpartition(".")[0]
        visitor = _Imports(package, set(modules))
        visitor.visit(ast.parse(file.read_text(encoding="utf-8")))
        targets = {owner(name) for name in visitor.names if name.startswith("polyembed")} - {None, module}
        graph[module] = targets
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_no_import_cycles() -> None:
    graph = _graph()
    cycles = _cycles(graph)
    assert not cycles, "import cycles: " + "; ".join(
        " / ".join(f"{m} -> {sorted(t for t in graph[m] if t in cycle)}" for m in cycle) for cycle in cycles)


def test_lower_layers_never_import_higher_ones() -> None:
    graph = _graph()
    unknown = sorted({_layer(m) for m in graph} - set(LAYERS))
    assert not unknown, f"modules with no layer in LAYERS: {unknown}"
    upward = sorted(f"{m} -> {t}" for m, targets in graph.items() for t in targets
                    if LAYERS[_layer(t)] > LAYERS[_layer(m)])
    assert not upward, "imports of a higher layer: " + ", ".join(upward)


def test_the_checker_sees_imports_inside_functions_and_under_type_checking() -> None:
    visitor = _Imports("polyembed.models", {"polyembed.models.loading", "polyembed.cli", "polyembed.api"})
    visitor.visit(ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from polyembed.api import encode\n"
        "def f():\n    from .loading import load_model\n    import polyembed.cli\n"))
    assert visitor.names == {"polyembed.models.loading", "polyembed.cli", "polyembed.api", "typing"}
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
