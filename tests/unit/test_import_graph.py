"""The shape of ``src/``: no circle of imports, and layers that depend one way
(``cli``/``api``/``web`` → ``pipeline`` → ``jobs``, ``media`` → ``db``).

The graph is read from the source (every ``import`` that runs, in functions too;
``if TYPE_CHECKING:`` blocks never run and are left out). Importing ``a.b.c`` from
outside ``a.b`` runs ``a.b``'s ``__init__`` first, so that edge is counted too; from
inside the package it is already running.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).parents[2] / "src"
ROOT = "photo_pipeline"

# Layer of each top-level part: a module may import only its own layer or lower ones.
LAYERS = {
    "errors": 0,
    "write_gate": 0,
    "config": 0,
    "logs": 0,
    "photo_pipeline": 0,  # the root package itself: its __version__
    "db": 1,
    "media": 2,
    "jobs": 2,
    "pipeline": 3,
    "sample": 3,
    "web": 4,
    "api": 4,
    "cli": 5,
    "__main__": 6,
}
# Parts of one layer that must still not know each other.
APART = {("media", "jobs"), ("jobs", "media"), ("media", "db"), ("web", "api")}


def _modules() -> dict[str, tuple[Path, bool]]:
    found = {}
    for path in (SRC / ROOT).rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        package = parts[-1] == "__init__"
        if package:
            parts.pop()
        found[".".join(parts)] = (path, package)
    return found


def _run_time_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement outside ``if TYPE_CHECKING:`` blocks."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = _modules()

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, (path, package) in modules.items():
        here = name if package else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in _run_time_imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets |= {t for a in node.names if (t := known(a.name))}
                continue
            if node.level:
                base = ".".join(here.split(".")[: len(here.split(".")) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            for alias in node.names:
                if (target := known(f"{base}.{alias.name}") or known(base)) is not None:
                    targets.add(target)
        for target in targets:
            if target == name:
                continue
            graph[name].add(target)
            # The packages between the importer and the target run first.
            parent = target.rpartition(".")[0]
            while parent and not (name == parent or name.startswith(parent + ".")):
                graph[name].add(parent)
                parent = parent.rpartition(".")[0]
    return {name: {t for t in targets if t.startswith(ROOT)} for name, targets in graph.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
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


def _part(module: str) -> str:
    return module.split(".")[1] if "." in module else module


def test_the_graph_sees_imports_in_functions_and_the_packages_they_run() -> None:
    graph = import_graph()
    # ``abandoned`` imports organize's journal: organize's __init__ runs first.
    assert "photo_pipeline.pipeline.organize.journal" in graph["photo_pipeline.pipeline.abandoned"]
    assert "photo_pipeline.pipeline.organize" in graph["photo_pipeline.pipeline.abandoned"]
    # ``job cancel`` imports ``abandoned`` inside its function.
    assert "photo_pipeline.pipeline.abandoned" in graph["photo_pipeline.cli.jobs"]


def test_a_planted_circle_is_found() -> None:
    graph = import_graph()
    graph["photo_pipeline.pipeline.files.paths"].add("photo_pipeline.pipeline.organize.run")
    assert any("photo_pipeline.pipeline.files.paths" in c for c in cycles(graph))


def test_no_circle_of_imports_in_src() -> None:
    assert cycles(import_graph()) == []


def test_layers_depend_one_way() -> None:
    wrong = []
    for module, targets in import_graph().items():
        for target in targets:
            low, high = _part(module), _part(target)
            if LAYERS[high] > LAYERS[low] or (low, high) in APART:
                wrong.append(f"{module} -> {target}")
    assert wrong == []


@pytest.mark.parametrize("package", ["files"])
def test_the_file_layer_knows_no_job_that_uses_it(package: str) -> None:
    """``pipeline.files`` is what every file-moving job calls: it imports none of them."""
    inside = f"{ROOT}.pipeline.{package}"
    wrong = [
        f"{module} -> {target}"
        for module, targets in import_graph().items()
        if module.startswith(inside)
        for target in targets
        if target.startswith(f"{ROOT}.pipeline.") and not target.startswith(inside)
    ]
    assert wrong == []
