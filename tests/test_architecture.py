"""The package's layering, read from its source: no import cycles between modules at import time, and the trainer
never reaches the stages built on the model (inference and MD). Deferred imports inside functions are how the
model swaps in its kernels and how `deeppot.DeepPot` stays lazy; they count for the trainer rule only."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "deeppot"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imported(name: str, path: Path, top_level_only: bool) -> set[str]:
    """The deeppot modules a module imports (a package's submodule where `from package import sub` names one)."""
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else ast.walk(tree)
    found = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's package upwards
                package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
            found.update(f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names)
    return {m for m in found if m in MODULES}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

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
            component = []
            while not component or component[-1] != v:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_the_graph_reads_the_package():
    graph = {m: imported(m, p, top_level_only=True) for m, p in MODULES.items()}
    assert "deeppot.kernels.fitting" in graph["deeppot.kernels.fitting_gemm"]
    assert "deeppot.model.analytic" in graph["deeppot.kernels.fitting"]
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]


def test_no_import_cycles_at_import_time():
    graph = {m: imported(m, p, top_level_only=True) for m, p in MODULES.items()}
    assert cycles(graph) == []


def test_the_trainer_never_imports_inference_or_md():
    for name, path in MODULES.items():
        if name.startswith("deeppot.train"):
            later = {m for m in imported(name, path, top_level_only=False)
                     if m.startswith(("deeppot.infer", "deeppot.md"))}
            assert not later, f"{name} imports {sorted(later)}"
