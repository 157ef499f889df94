"""The shape of the code: no module of storbench imports a module that imports it back.

The import graph is read statically (every ``import`` in every module, also those inside functions, which
is where cycles hide), so the test needs nothing installed and imports nothing.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent / "src" / "storbench"

# Imports allowed to close a cycle. The last ones (targets/local.py importing targets/ceph.py and targets/nfs.py,
# which imported it back) went with the registry of target kinds (targets/registry.py); never add one: break the
# new cycle instead.
KNOWN_CYCLE_EDGES: frozenset[tuple[str, str]] = frozenset()  # none left: keep it that way

Graph = dict[str, set[str]]


def _module_name(path: Path, package_dir: Path) -> str:
    parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imported(tree: ast.Module, module: str, is_package: bool, modules: set[str]) -> set[str]:
    """The storbench modules a module imports, resolving relative imports and ``from pkg import submodule``."""
    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join([*package, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                names.append(submodule if submodule in modules else base)
        found.update(name for name in names if name in modules and name != module)
    return found


def import_graph(package_dir: Path = PACKAGE_DIR) -> Graph:
    paths = {_module_name(path, package_dir): path for path in sorted(package_dir.rglob("*.py"))}
    modules = set(paths)
    return {
        name: _imported(ast.parse(path.read_text(), str(path)), name, path.name == "__init__.py", modules)
        for name, path in paths.items()
    }


def cycles(graph: Graph) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted, in sorted order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
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
    return sorted(found)


def _describe(graph: Graph, component: list[str]) -> str:
    edges = [f"{a} -> {b}" for a in component for b in sorted(graph[a]) if b in component]
    return "; ".join(edges)


def test_no_new_import_cycles() -> None:
    graph = import_graph()
    assert len(graph) > 50, "the package was not found"
    without_known = {module: {t for t in targets if (module, t) not in KNOWN_CYCLE_EDGES}
                     for module, targets in graph.items()}
    found = cycles(without_known)
    assert not found, "modules import each other (make one depend on the other, or move what both need into a " \
        "third module): " + " | ".join(_describe(without_known, c) for c in found)


def test_known_cycle_edges_still_exist() -> None:
    """A removed cycle leaves its entry behind, and a later import along it would pass unseen: drop the entry."""
    graph = import_graph()
    gone = sorted(edge for edge in KNOWN_CYCLE_EDGES if edge[1] not in graph.get(edge[0], set()))
    assert not gone, f"these imports are gone, remove them from KNOWN_CYCLE_EDGES: {gone}"


def test_the_cycle_check_sees_cycles(tmp_path: Path) -> None:
    """The check can fail: a cycle through a function-level, relative ``from . import module`` is found."""
    package = tmp_path / "storbench"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("from storbench.sub import b\n")
    (package / "sub" / "b.py").write_text("def f():\n    from .. import a\n    return a\n")
    (package / "c.py").write_text("import storbench.a\n")
    graph = import_graph(package)
    assert graph == {"storbench": set(), "storbench.sub": set(), "storbench.a": {"storbench.sub.b"},
                     "storbench.sub.b": {"storbench.a"}, "storbench.c": {"storbench.a"}}
    assert cycles(graph) == [["storbench.a", "storbench.sub.b"]]
