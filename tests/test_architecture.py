"""The shape of the code: no module of storbench imports a module that imports it back, and the pure core is pure.

The import graph is read statically (every ``import`` in every module, also those inside functions and under
``TYPE_CHECKING``, which is where cycles and shortcuts hide), so the test needs nothing installed and imports
nothing.

Layers (docs/architecture.md): every module is either pure (takes data, returns data) or shell (performs effects).
A pure module imports no module that performs effects (processes, the database, the network, the clock, files:
``FORBIDDEN_IN_PURE``), no shell module, and no pure module of a layer above its own (``PURE_LAYERS``, bottom
first). The shell may import anything (but no cycle).
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

# The pure core, bottom layer first. An entry is a module, or ``package.*``: the package and every module in it. A
# module belongs to its most specific entry here or in SHELL (so `storbench.lab.ceph_conf` is pure in shell `lab`).
PURE_LAYERS: tuple[tuple[str, ...], ...] = (
    # what everything uses: units and sizes, the one user error, text made safe to show, the version; the design a
    # run stored (what its plan asked)
    ("storbench", "storbench.units", "storbench.errors", "storbench.safe_text", "storbench.run_design",
     "storbench.requirements", "storbench.apt_sources"),
    # the data that flows: cases, measurements, telemetry series
    ("storbench.model.*", "storbench.telemetry.series"),
    # edge formats: fio's job text and output, /proc and counters read into series, lab files and manifests rendered,
    # secrets redacted, S3 requests signed, which cases may touch which devices, stamped sectors written and read back
    ("storbench.durability", "storbench.fio.*", "storbench.telemetry.proc", "storbench.telemetry.ceph_counters",
     "storbench.telemetry.prometheus", "storbench.telemetry.digest", "storbench.telemetry.collect",
     "storbench.telemetry.cluster_state", "storbench.telemetry.k8s_events", "storbench.telemetry.kubelet",
     "storbench.lab.ceph_conf", "storbench.lab.nfs_conf", "storbench.lab.hosts_conf",
     "storbench.lab.k8s_conf", "storbench.lab.volume_conf", "storbench.execute.k8s_manifests",
     "storbench.execute.k8s_operations",
     "storbench.execute.pod_results", "storbench.execute.k8s_rbac",
     "storbench.redact", "storbench.s3sign", "storbench.targets.guards", "storbench.oci"),
    # the plan file: schema, loading, checks across keys; the fault steps a plan may ask of its labs
    ("storbench.config.*", "storbench.faults"),
    # a plan's cases: their ids, their order and lab designs in time, what they need of the machine and how long
    # they may take
    ("storbench.case_ids", "storbench.schedule", "storbench.demands", "storbench.watchdog",
     "storbench.working_set"),
    # statistics over the model
    ("storbench.stats.*", "storbench.events"),
    # rendering: tables, figures, exports, the HTML report; the flat export record
    ("storbench.report.*", "storbench.records"),
    # plan -> cases (asks stats for a search's grid); imported results; the plan reference and the documents
    # `storbench docs` prints
    ("storbench.plan", "storbench.importer", "storbench.reference", "storbench.reference_tables", "storbench.manual"),
)
SHELL: tuple[str, ...] = (
    "storbench.__main__", "storbench.cli.*", "storbench.checks", "storbench.orchestrate", "storbench.run_state",
    "storbench.run_search", "storbench.resume", "storbench.sessions", "storbench.fault_driver",
    "storbench.selection", "storbench.execute.*", "storbench.lab.*", "storbench.targets.*", "storbench.telemetry.*",
    "storbench.store.*", "storbench.netclient", "storbench.shell", "storbench.private_files",
    "storbench.trusted_files", "storbench.ceph_client", "storbench.beside", "storbench.doctor",
    "storbench.fio_image", "storbench.machine_setup",
)
# What a pure module may not import: processes, the database, the network, the clock, threads, signals, files.
# A name covers its submodules, except those in PURE_STDLIB (string functions only).
FORBIDDEN_IN_PURE: tuple[str, ...] = (
    "subprocess", "sqlite3", "socket", "urllib", "http", "time", "os", "pathlib", "shutil", "tempfile", "signal",
    "threading", "multiprocessing", "concurrent", "ctypes", "fcntl", "select", "kubernetes",
)
PURE_STDLIB: frozenset[str] = frozenset({"urllib.parse"})

# Imports of the pure core that break the layers today, each with its reason. Never add one: move the code instead
# (a pure helper into the lower layer, a pure module out of the shell package); the test below says when one goes.
KNOWN_LAYER_EDGES: dict[tuple[str, str], str] = {
    ("storbench.config.checks", "storbench.stats.selectors"):
        "the compare selectors are checked with stats.selectors.parse_selector and blocked_settings",
}
KNOWN_EFFECT_IMPORTS: dict[tuple[str, str], str] = {
    ("storbench.config.checks", "os.path"):
        "os.path.abspath tells two path targets apart (reads the working directory)",
}


def _module_name(path: Path, package_dir: Path) -> str:
    parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(package_dir: Path) -> dict[str, Path]:
    return {_module_name(path, package_dir): path for path in sorted(package_dir.rglob("*.py"))}


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
    paths = _modules(package_dir)
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


# ---------------------------------------------------------------------------------------------
# Layers: the pure core imports no effects, no shell and nothing above it


def external_imports(package_dir: Path = PACKAGE_DIR) -> dict[str, set[str]]:
    """Every absolute import of a module outside the package (``os.path``, ``urllib.parse``, ``numpy``), by module."""
    top = package_dir.name
    found: dict[str, set[str]] = {}
    for name, path in _modules(package_dir).items():
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names.add(node.module)
        found[name] = {n for n in names if n.split(".")[0] != top}
    return found


def _covers(entry: str, module: str) -> bool:
    if entry.endswith(".*"):
        package = entry[:-2]
        return module == package or module.startswith(package + ".")
    return module == entry


def _specificity(entry: str) -> tuple[int, int]:
    """A module entry beats a package entry of the same length; a longer entry beats a shorter one."""
    return (len(entry.removesuffix(".*").split(".")), 0 if entry.endswith(".*") else 1)


def layer_of(module: str, layers: tuple[tuple[str, ...], ...] = PURE_LAYERS,
             shell: tuple[str, ...] = SHELL) -> int | None:
    """The index of a module's pure layer, None for the shell (KeyError: the module is in neither)."""
    entries = [(entry, index) for index, layer in enumerate(layers) for entry in layer]
    entries += [(entry, None) for entry in shell]
    matching = [(entry, index) for entry, index in entries if _covers(entry, module)]
    if not matching:
        raise KeyError(module)
    return max(matching, key=lambda item: _specificity(item[0]))[1]


def layer_violations(graph: Graph, layers: tuple[tuple[str, ...], ...] = PURE_LAYERS,
                     shell: tuple[str, ...] = SHELL) -> dict[tuple[str, str], str]:
    """Each import of a pure module that goes to the shell or to a higher layer, with what is wrong."""
    out: dict[tuple[str, str], str] = {}
    for module, targets in sorted(graph.items()):
        own = layer_of(module, layers, shell)
        if own is None:
            continue
        for target in sorted(targets):
            other = layer_of(target, layers, shell)
            if other is None:
                out[(module, target)] = "pure imports shell"
            elif other > own:
                out[(module, target)] = f"layer {own} imports layer {other}"
    return out


def effect_violations(imports: dict[str, set[str]], layers: tuple[tuple[str, ...], ...] = PURE_LAYERS,
                      shell: tuple[str, ...] = SHELL) -> set[tuple[str, str]]:
    """Each import by a pure module of something that performs effects (FORBIDDEN_IN_PURE)."""
    def forbidden(name: str) -> bool:
        return name not in PURE_STDLIB and any(name == f or name.startswith(f + ".") for f in FORBIDDEN_IN_PURE)

    return {(module, name) for module, names in imports.items() if layer_of(module, layers, shell) is not None
            for name in names if forbidden(name)}


def test_every_module_has_its_layer() -> None:
    """A new module is placed on purpose: pure (in a layer) or shell; and no entry names a module that is gone."""
    modules = set(import_graph())
    unplaced = []
    for module in sorted(modules):
        try:
            layer_of(module)
        except KeyError:
            unplaced.append(module)
    assert not unplaced, f"put these in PURE_LAYERS or SHELL: {unplaced}"
    entries = [entry for layer in PURE_LAYERS for entry in layer] + list(SHELL)
    assert len(entries) == len(set(entries)), "an entry is listed twice"
    stale = [entry for entry in entries if not any(_covers(entry, module) for module in modules)]
    assert not stale, f"these entries name no module: {stale}"


def test_pure_modules_import_no_effects() -> None:
    found = effect_violations(external_imports()) - set(KNOWN_EFFECT_IMPORTS)
    assert not found, "pure modules import what performs effects (take the data as an argument, or move the " \
        f"module to the shell): {sorted(found)}"


def test_pure_modules_import_no_shell_and_nothing_above() -> None:
    found = {edge: what for edge, what in layer_violations(import_graph()).items() if edge not in KNOWN_LAYER_EDGES}
    assert not found, "the pure core imports the shell or a layer above (move the needed pure code down): " + \
        "; ".join(f"{a} -> {b} ({what})" for (a, b), what in sorted(found.items()))


def test_known_layer_edges_still_break_the_layers() -> None:
    """An edge that is gone (or no longer breaks the layers) leaves its entry behind, and a later import along it
    would pass unseen: drop the entry."""
    gone = sorted(set(KNOWN_LAYER_EDGES) - set(layer_violations(import_graph())))
    assert not gone, f"remove these from KNOWN_LAYER_EDGES: {gone}"
    gone_effects = sorted(set(KNOWN_EFFECT_IMPORTS) - effect_violations(external_imports()))
    assert not gone_effects, f"remove these from KNOWN_EFFECT_IMPORTS: {gone_effects}"


# Pure modules still inside shell packages: the tree does not show them pure. Move one into a pure package (and its
# entry in PURE_LAYERS with it), then drop it here.
PURE_IN_SHELL_PACKAGES = frozenset({
    "storbench.telemetry.series", "storbench.telemetry.proc", "storbench.telemetry.ceph_counters",
    "storbench.telemetry.prometheus", "storbench.telemetry.digest", "storbench.telemetry.collect",
     "storbench.telemetry.cluster_state", "storbench.telemetry.k8s_events", "storbench.telemetry.kubelet",
    "storbench.lab.ceph_conf", "storbench.lab.nfs_conf", "storbench.lab.hosts_conf",
    "storbench.lab.k8s_conf", "storbench.lab.volume_conf", "storbench.execute.k8s_manifests",
    "storbench.execute.k8s_operations",
    "storbench.execute.pod_results", "storbench.execute.k8s_rbac",
    "storbench.targets.guards",
})


def test_pure_modules_in_shell_packages_are_listed() -> None:
    """No new pure module goes into a shell package unseen; one moved out is struck off the list."""
    graph = import_graph()
    found = {module for module in graph if layer_of(module) is not None and "." in module
             and module.rsplit(".", 1)[0] in graph and layer_of(module.rsplit(".", 1)[0]) is None}
    assert found == PURE_IN_SHELL_PACKAGES, f"new: {sorted(found - PURE_IN_SHELL_PACKAGES)}, " \
        f"moved out: {sorted(PURE_IN_SHELL_PACKAGES - found)}"


def test_the_layer_check_sees_what_breaks_the_layers(tmp_path: Path) -> None:
    """The checks can fail: a pure module that runs a process, one that imports the shell through a function-level
    relative import, one that imports a layer above, and one under TYPE_CHECKING are all found; the shell and a
    pure module in a shell package that imports only pure code below it are not."""
    package = tmp_path / "storbench"
    for sub in ("core", "stats", "shell"):
        (package / sub).mkdir(parents=True)
        (package / sub / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "core" / "data.py").write_text("import subprocess\nfrom urllib.parse import quote\n")
    (package / "core" / "up.py").write_text("def f():\n    from ..stats import calc\n    return calc\n")
    (package / "core" / "typed.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                               "    from storbench.shell.run import go\n")
    (package / "stats" / "calc.py").write_text("import time\nfrom storbench.core import data\n")
    (package / "stats" / "reach.py").write_text("def f():\n    from . import calc\n    from ..shell import run\n")
    (package / "shell" / "run.py").write_text("import sqlite3\nimport subprocess\nfrom storbench.stats import calc\n")
    (package / "shell" / "render.py").write_text("import os.path\nfrom storbench.core import data\n")
    layers = (("storbench", "storbench.core.*", "storbench.shell.render"), ("storbench.stats.*",))
    shell = ("storbench.shell.*",)
    graph = import_graph(package)
    assert layer_of("storbench.shell.render", layers, shell) == 0
    assert layer_of("storbench.shell", layers, shell) is None
    assert layer_violations(graph, layers, shell) == {
        ("storbench.core.up", "storbench.stats.calc"): "layer 0 imports layer 1",
        ("storbench.core.typed", "storbench.shell.run"): "pure imports shell",
        ("storbench.stats.reach", "storbench.shell.run"): "pure imports shell",
    }
    assert effect_violations(external_imports(package), layers, shell) == {
        ("storbench.core.data", "subprocess"), ("storbench.stats.calc", "time"),
        ("storbench.shell.render", "os.path")}


def with_packages(graph: Graph) -> Graph:
    """The graph with the edges Python adds itself: importing ``a.b.c`` first imports ``a`` and ``a.b``."""
    return {name: {*targets, *(parent for i in range(1, len(name.split(".")))
                               if (parent := ".".join(name.split(".")[:i])) in graph)}
            for name, targets in graph.items()}


def import_first_candidates(graph: Graph) -> list[str]:
    """The modules whose being imported first can matter: the members of a cycle once packages' ``__init__`` edges
    are added. A module outside every such cycle, imported first, enters any cycle below it through the member it
    reaches first, with only finished modules outside that cycle loaded before: the same as that member imported
    first, which is tried."""
    return sorted(name for component in cycles(with_packages(graph)) for name in component)


def test_the_modules_imported_first_are_the_members_of_cycles_through_packages() -> None:
    graph = {"p": {"p.a"}, "p.a": {"q"}, "p.b": set(), "q": set(), "r": {"p.b"}}
    assert with_packages(graph)["p.a"] == {"q", "p"}
    assert import_first_candidates(graph) == ["p", "p.a"]  # p.a first imports p, which imports p.a: order matters
    found = import_first_candidates(import_graph())
    assert {"storbench.config", "storbench.config.schema", "storbench.model", "storbench.model.case"} <= set(found)
    assert "storbench.stats.cost" not in found  # no package __init__ of its imports leads back to it


def test_every_module_imports_on_its_own() -> None:
    """Each module that can matter imported first, alone (storbench's modules forgotten before each): an import
    cycle that only bites in one order (through a package's ``__init__``, which the graph above does not follow)
    fails here."""
    import subprocess
    import sys

    script = """
import importlib, sys
failed = []
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m == "storbench" or m.startswith("storbench.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except Exception as exc:
        failed.append(f"{name}: {type(exc).__name__}: {exc}")
print("\\n".join(failed))
"""
    names = [name for name in import_first_candidates(import_graph()) if name != "storbench.__main__"]
    # two interpreters at once, every other module each (the machine's two cores): the same imports, half the time
    workers = [subprocess.Popen([sys.executable, "-c", script, *names[half::2]], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, cwd=PACKAGE_DIR.parent) for half in (0, 1)]
    for worker in workers:
        out, err = worker.communicate(timeout=300)
        assert worker.returncode == 0, err
        assert out.strip() == "", out


# Function-level imports load a module only when it is needed: start-up (`storbench run` imports about 600
# modules before its first fio) and optional dependencies. In `storbench.cli` that is the rule, said once in its
# docstring: each command imports what it uses when it runs, so the parser, `--help` and every other command do
# not pay for it. Elsewhere each says why, in a comment that starts ``# lazy:`` on it or on the line just above its
# block of imports (a tool's pragma is no reason).
LAZY_BY_RULE: tuple[str, ...] = ("storbench.cli.*",)
LAZY_REASON = "# lazy:"


def lazy_imports_without_reason(package_dir: Path = PACKAGE_DIR) -> list[str]:
    """``module:line`` of each import inside a function (not under ``TYPE_CHECKING``) that gives no reason."""
    found = []
    for module, path in _modules(package_dir).items():
        if any(_covers(entry, module) for entry in LAZY_BY_RULE):
            continue
        lines = path.read_text().splitlines()
        tree = ast.parse("\n".join(lines), str(path))
        checking = [(node.lineno, node.end_lineno or node.lineno) for node in ast.walk(tree)
                    if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)]
        inside = {node for function in ast.walk(tree) if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
                  for node in ast.walk(function) if isinstance(node, (ast.Import, ast.ImportFrom))}
        for node in sorted(inside, key=lambda n: n.lineno):
            if any(low <= node.lineno <= high for low, high in checking):
                continue
            if any(LAZY_REASON in line for line in lines[node.lineno - 1:node.end_lineno]):
                continue
            above = node.lineno - 2
            while above >= 0 and lines[above].strip().startswith(("import ", "from ")) and "#" not in lines[above]:
                above -= 1
            if above < 0 or LAZY_REASON not in lines[above]:
                found.append(f"{module}:{node.lineno}")
    return found


def test_function_level_imports_say_why() -> None:
    found = lazy_imports_without_reason()
    assert not found, "import these at the top of the module, or say why not in a comment (start-up time, an " \
        f"optional dependency): {found}"


def test_the_lazy_import_check_sees_one_without_a_reason(tmp_path: Path) -> None:
    package = tmp_path / "storbench"
    (package / "cli").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "cli" / "__init__.py").write_text("def main():\n    import json\n")  # the rule in cli
    (package / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import json\n\n"
        "def f():\n    # lazy: a reason above the block\n    import json\n    import csv\n\n"
        "def g():\n    import json  # lazy: a reason on the line\n\n"
        "def h():\n    x = 1\n    import json\n    return x\n\n"
        "def i():\n    import json  # noqa: PLC0415\n\n"
        "def j():\n    # a comment that gives no reason\n    import json\n")
    assert lazy_imports_without_reason(package) == ["storbench.a:15", "storbench.a:19", "storbench.a:23"]


# The most lines a module of storbench may have (issue 31: "no module over ~400 lines"). Past it, split the module
# where its parts are apart (commands by group, a model's values from their readers), not by line count alone.
MAX_MODULE_LINES = 420


def long_modules(package: Path, limit: int = MAX_MODULE_LINES) -> list[tuple[str, int]]:
    """(module path relative to ``package``, its line count) of each module over ``limit`` lines."""
    found = [(str(path.relative_to(package)), len(path.read_text().splitlines())) for path in package.rglob("*.py")]
    return sorted((name, lines) for name, lines in found if lines > limit)


def test_no_module_is_over_about_400_lines() -> None:
    assert long_modules(PACKAGE_DIR) == [], "split these modules (see MAX_MODULE_LINES)"


def test_the_module_size_check_sees_a_long_module(tmp_path: Path) -> None:
    (tmp_path / "short.py").write_text("x = 1\n" * 10)
    (tmp_path / "long.py").write_text("x = 1\n" * 11)
    assert long_modules(tmp_path, 10) == [("long.py", 11)]
    assert ("cli/__init__.py", len((PACKAGE_DIR / "cli" / "__init__.py").read_text().splitlines())) in \
        long_modules(PACKAGE_DIR, 1)  # it reads the package's own modules
