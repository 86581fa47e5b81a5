"""The package's imports flow one way: no module imports, at module level or inside a function,
a module that imports it back (directly or through others), and no module imports one of ours
by a name in a string (importlib), which would hide such a circle from this check and from the
reader. Read from the sources (ast), not by importing them."""

from __future__ import annotations

import ast
import os
import pathlib

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "analyzer")


def _modules() -> dict[str, str]:
    out = {}
    for dirpath, _, files in os.walk(ROOT):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, os.path.dirname(ROOT))[:-3].replace(os.sep, ".")
                out[rel.removesuffix(".__init__")] = path
    return out


def _imports(module: str, path: str, known: dict[str, str]) -> set[str]:
    """The analyzer modules `module` imports anywhere in its source."""
    tree = ast.parse(pathlib.Path(path).read_text(encoding="utf-8"))
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for a in node.names:
                sub = f"{target}.{a.name}"
                found.add(sub if sub in known else target)
    return {m for m in found if m in known and m != module}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

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
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_circle():
    known = _modules()
    graph = {m: _imports(m, p, known) for m, p in known.items()}
    assert sum(len(v) for v in graph.values()) > 100  # the check saw the package's imports
    assert _cycles(graph) == []


def test_the_check_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_by_name_in_a_string():
    offenders = []
    modules = _modules()
    assert len(modules) > 50 and "analyzer.engine.scan" in modules  # the check reads the package's sources
    for module, path in modules.items():
        for node in ast.walk(ast.parse(pathlib.Path(path).read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
                if name in ("import_module", "__import__"):
                    offenders.append(f"{module}:{node.lineno}")
    assert offenders == []
