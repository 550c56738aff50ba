"""The import graph of `benchmarks/`: it flows one way, from the runners (`run*.py`, which measure and store JSON)
to the renderers (`render*.py`, which read stored JSON only), never back; and no file of the project grows past
500 lines.

Why: a renderer that imports its runner drags the measuring code (and its cycles) into `make render`, and a
section could then not be rendered where the runner's imports fail. Modules are told apart by name: `render*`
renderers, `run*` runners (the command-line entry points that measure), `spec*` what a study's runners and
renderers share, `benchmarks.common.*` what every study shares; other modules in a study folder are the runners'
helpers. Every import counts, at module level or inside a function, as in tests/test_import_graph.py.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.test_import_graph import _cycles, _Imports

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"
MAX_LINES = 500
SCORING_HELPERS = {"evaluate_on_demo_tasks", "demo_config_path", "demo_tasks", "headline_metrics", "format_headline",
                   "with_teacher_ratio", "tatoeba_interval", "HEADLINE_LABELS"}
"""The demo's scoring, which lives in `polyembed.eval.headline` for the demo and the benchmarks alike."""
NOT_IN_RENDER_ALL: dict[str, str] = {}
"""Study renderers `make render` leaves out, each with the reason (none: every renderer keeps its section when
its JSON is not stored)."""


def _modules() -> dict[str, Path]:
    modules = {}
    for file in BENCHMARKS.rglob("*.py"):
        parts = list(file.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = file
    return modules


def _owner(name: str, modules: dict[str, Path]) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _graph() -> dict[str, set[str]]:
    """Each benchmark module -> the benchmark modules it imports (itself and its parent packages aside)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for module, file in modules.items():
        package = module if file.name == "__init__.py" else module.rpartition(".")[0]
        visitor = _Imports(package, set(modules))
        visitor.visit(ast.parse(file.read_text(encoding="utf-8")))
        targets = {_owner(name, modules) for name in visitor.names if name.split(".")[0] == "benchmarks"}
        graph[module] = {t for t in targets if t and t != module and not module.startswith(f"{t}.")}
    return graph


def _kind(module: str) -> str:
    last = module.rpartition(".")[2]
    if module.startswith("benchmarks.common"):
        return "common"
    if last == "render_all" or last == "render" or last.startswith("render_"):
        return "renderer"
    if last == "run" or last.startswith("run_"):
        return "runner"
    if last == "spec" or last.startswith("spec_"):
        return "spec"
    if module.count(".") <= 1:  # benchmarks, benchmarks.<study>: docstrings only
        return "package"
    return "helper"


def _reach(graph: dict[str, set[str]], start: str) -> dict[str, list[str]]:
    """Every module `start` imports directly or through others, with the chain of imports that gets there."""
    paths = {start: [start]}
    todo = [start]
    while todo:
        module = todo.pop()
        for target in sorted(graph.get(module, ())):
            if target not in paths:
                paths[target] = [*paths[module], target]
                todo.append(target)
    return paths


def test_benchmark_modules_import_no_cycle() -> None:
    graph = _graph()
    cycles = _cycles(graph)
    assert not cycles, "import cycles: " + "; ".join(" / ".join(cycle) for cycle in cycles)


def test_no_module_takes_a_private_name_from_another() -> None:
    """A name with a leading underscore is its module's own: what two modules share is public, in a shared module
    (a study's spec or `benchmarks.common`)."""
    modules = _modules()
    found = []
    for module, file in modules.items():
        package = module if file.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = node.module or ""
            if node.level:
                parent = package
                for _ in range(node.level - 1):
                    parent = parent.rpartition(".")[0]
                base = f"{parent}.{base}" if base else parent
            if base.split(".")[0] != "benchmarks":
                continue
            found += [f"{module}: from {base} import {alias.name}" for alias in node.names
                      if alias.name.startswith("_") and not alias.name.startswith("__")]
    assert not found, "private names imported across modules: " + "; ".join(found)


def test_no_renderer_reaches_a_runner() -> None:
    """A renderer never imports a runner, nor anything that imports one."""
    graph = _graph()
    found = [" -> ".join(path) for module in graph if _kind(module) == "renderer"
             for target, path in _reach(graph, module).items() if _kind(target) == "runner"]
    assert not found, "renderers that reach a runner: " + "; ".join(found)


def test_renderers_specs_and_common_stay_among_themselves() -> None:
    """What a renderer imports is a renderer, a spec or common, and so is all they import; a spec imports specs and
    common only, and common nothing but common: none of them can start a measurement."""
    graph = _graph()
    allowed = {"renderer": {"renderer", "spec", "common", "package"}, "spec": {"spec", "common", "package"},
               "common": {"common", "package"}}
    found = [" -> ".join(path) for module in graph if _kind(module) in allowed
             for target, path in _reach(graph, module).items() if _kind(target) not in allowed[_kind(module)]]
    assert not found, "imports out of a renderer's, spec's or common's reach: " + "; ".join(found)


def test_render_all_calls_every_study_renderer() -> None:
    """`make render` (benchmarks/render_all.py) imports renderers only, every study's `render` module among them."""
    from benchmarks.render_all import RENDERERS

    modules = _modules()
    assert all(name in modules and _kind(name) == "renderer" for name in RENDERERS), RENDERERS
    studies = {name for name in modules if name.endswith(".render") and name.count(".") == 2}
    assert studies - set(RENDERERS) == set(NOT_IN_RENDER_ALL), sorted(studies - set(RENDERERS))


def test_benchmarks_take_the_demos_scoring_from_the_eval_layer() -> None:
    """The demo's scoring helpers live in `polyembed.eval.headline`: a benchmark imports them from there, not from
    `polyembed.demo` (the demo's job)."""
    found = []
    for module, file in _modules().items():
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "polyembed.demo":
                found += [f"{module}: {alias.name}" for alias in node.names if alias.name in SCORING_HELPERS]
    assert not found, "scoring helpers imported from polyembed.demo: " + ", ".join(found)


def test_no_source_file_exceeds_the_line_limit() -> None:
    """A file over 500 lines holds more than one thing: split it by what each part does."""
    files = [*(ROOT / "src").rglob("*.py"), *BENCHMARKS.rglob("*.py")]
    long = sorted(f"{file.relative_to(ROOT)} ({count})" for file in files
                  if (count := len(file.read_text(encoding="utf-8").splitlines())) > MAX_LINES)
    assert not long, f"over {MAX_LINES} lines: " + ", ".join(long)


def test_the_checker_tells_module_kinds_and_chains_apart() -> None:
    assert [_kind(m) for m in ("benchmarks.distill.run", "benchmarks.modular.run_cla", "benchmarks.distill.render",
                               "benchmarks.wacse.render_dev", "benchmarks.render_all", "benchmarks.serve.spec_phases",
                               "benchmarks.common.results", "benchmarks.distill.studies", "benchmarks.distill")] == [
        "runner", "runner", "renderer", "renderer", "renderer", "spec", "common", "helper", "package"]
    graph = {"a.render": {"a.spec"}, "a.spec": {"a.helper"}, "a.helper": {"a.run"}, "a.run": set()}
    assert _reach(graph, "a.render")["a.run"] == ["a.render", "a.spec", "a.helper", "a.run"]
