"""Imports run one way between layers (DESIGN.md §2), and only the kernel sees
`plax._src`.

Layers, lowest first: the kernel (`plax`); the standard library (`plax_stdlib`) and
the runtime (`plax_runtime`), side by side; the transforms; sharding and Pallas, side by
side; the plugins (the TPU plugin also sees Pallas, whose Mosaic lowering it owns).
A package may import only the layers its own entry in `ALLOWED` names. Every `.py`
file of every package is read with `ast`, so imports inside functions count as much
as those at the top, and so do `importlib.import_module("...")`/`__import__` calls
with literal names; only imports under `if TYPE_CHECKING:` are left out, since they
never run. Where a lower layer needs something from a higher one (eager dispatch,
the Jaxpr transformations behind `plax.extend.ad`, tracers' NumPy methods, the lax
functions the rule helpers compute with), it goes through the registry's declared
seams (`plax._src.plugins.SEAMS`, provided through `plax.interpreters` entry
points), which are not imports at all; `test_every_seam_is_provided_once` checks
them.
"""
from __future__ import annotations

import ast
import collections
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name
from workspace_layout import ROOT, Member, member_by_name, members, module_name

KERNEL = "plax"
PLUGINS = ("plax_cuda12", "plax_tpu")
ALLOWED = {
    "plax": {"plax"},
    "plax_stdlib": {"plax", "plax_stdlib"},
    "plax_runtime": {"plax", "plax_runtime"},
    "plax_transforms": {"plax", "plax_stdlib", "plax_runtime", "plax_transforms"},
    "plax_sharding": {"plax", "plax_stdlib", "plax_runtime", "plax_transforms",
                      "plax_sharding"},
    "plax_pallas": {"plax", "plax_stdlib", "plax_runtime", "plax_transforms", "plax_pallas"},
    **{p: {"plax", "plax_runtime", p} for p in PLUGINS},
    # The TPU plugin owns Pallas's Mosaic lowering (DESIGN.md §2), so it depends on
    # plax-pallas and may import what that installs.
    "plax_tpu": {"plax", "plax_stdlib", "plax_runtime", "plax_transforms", "plax_pallas",
                 "plax_tpu"},
    # the opt-in `jax` alias stands above every layer it maps onto
    "plax_as_jax": {"plax", "plax_stdlib", "plax_runtime", "plax_transforms", "plax_sharding",
                    "plax_as_jax"},
}
WORKSPACE_PACKAGES = set(ALLOWED)
# Upward edges that are allowed anyway, each with the reason. Empty: every seam is an
# entry point, not an import.
ALLOWED_UPWARD: dict[tuple[str, str], str] = {}


def _is_type_checking_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and (
        (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
        or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING"))


def _walk_runtime(tree: ast.AST, module_level_only: bool = False):
    """`ast.walk`, skipping `if TYPE_CHECKING:` bodies (and function bodies too, if
    `module_level_only`: what runs when the module is imported)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if _is_type_checking_block(child):
                todo.extend(child.orelse)
            elif not (module_level_only and isinstance(
                    child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))):
                todo.append(child)


def imported_modules(tree: ast.AST, this_module: str,
                     module_level_only: bool = False) -> list[tuple[int, str]]:
    """`(line, absolute name)` of every import that can run, at any depth: `import m`,
    `from m import x` (as `m.x`: a module, or a name in module `m`), and
    `importlib.import_module("...")`/`__import__("...")` with literal names."""
    found = []
    for node in _walk_runtime(tree, module_level_only):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                base = node.module
            else:  # relative: resolved against this module's package
                parts = this_module.split(".")[:-node.level] or [this_module.split(".")[0]]
                base = ".".join(parts + ([node.module] if node.module else []))
            found += [(node.lineno, base if alias.name == "*" else f"{base}.{alias.name}")
                      for alias in node.names]
        elif (isinstance(node, ast.Call) and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
              and not node.args[0].value.startswith(".")
              and ((isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                   or (isinstance(node.func, ast.Name)
                       and node.func.id in ("import_module", "__import__")))):
            found.append((node.lineno, node.args[0].value))
    return sorted(set(found))


def _modules() -> dict[str, tuple[Member, Path]]:
    found = {}
    for member in members():
        for file in member.python_files():
            found[module_name(member, file)] = (member, file)
    return found


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The workspace module `name` refers to (the longest known prefix), if any. A
    package that is only a namespace (`plax._src`) is no module: importing
    `plax._src.ir` is an edge to `plax._src.ir`, not to the facade `plax`."""
    if name not in MODULES and any(m.startswith(name + ".") for m in MODULES):
        return None
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        candidate = ".".join(parts[:i])
        if candidate in MODULES:
            return candidate
    return None


def _graph(module_level_only: bool = False
           ) -> tuple[dict[str, set[str]], list[tuple[str, int, str]]]:
    """Module → workspace modules it imports; and every raw import `(module, line, name)`."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    raw = []
    for mod, (_, file) in MODULES.items():
        this = mod + ".__init__" if file.name == "__init__.py" else mod
        tree = ast.parse(file.read_text(), str(file))
        for line, name in imported_modules(tree, this, module_level_only):
            raw.append((mod, line, name))
            target = _resolve(name)
            if target is not None and target != mod:
                graph[mod].add(target)
    return graph, raw


GRAPH, RAW_IMPORTS = _graph()
MODULE_LEVEL_GRAPH, _ = _graph(module_level_only=True)
# Rules of standard primitives call each other's primitives (broadcast_in_dim's
# transpose is a reduce_sum, whose transpose is a broadcast_in_dim): the standard
# library's modules may import each other inside functions. Nowhere else, and never
# across layers or at module level.
MUTUALLY_RECURSIVE_RULES = {"plax_stdlib"}


def _package(mod: str) -> str:
    return mod.split(".")[0]


def _where(mod: str, line: int) -> str:
    return f"{MODULES[mod][1].relative_to(ROOT)}:{line}"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []

    def visit(v: str):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
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
                components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return components


def test_layers_name_every_package():
    assert {m.import_name for m in members()} == WORKSPACE_PACKAGES


def test_module_level_imports_form_a_dag():
    """What runs at import time never loops back, in any layer."""
    cycles = _cycles(MODULE_LEVEL_GRAPH)
    assert not cycles, "module-level import cycles:\n" + \
        "\n".join(" <-> ".join(c) for c in cycles)


def test_no_cycle_crosses_a_layer_and_only_standard_rules_recurse():
    """No cycle, function-local imports included, joins two packages; within one,
    only the standard library's mutually recursive rules may form one."""
    cycles = _cycles(GRAPH)
    bad = [c for c in cycles if len({_package(m) for m in c}) > 1
           or _package(c[0]) not in MUTUALLY_RECURSIVE_RULES]
    assert not bad, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in bad)


@pytest.mark.parametrize("member", members(), ids=lambda m: m.name)
def test_imports_go_only_downward(member):
    package = member.import_name
    bad = [f"{_where(mod, line)} imports {name}"
           for mod, line, name in RAW_IMPORTS
           if _package(mod) == package and _package(name) in WORKSPACE_PACKAGES
           and _package(name) not in ALLOWED[package]
           and (package, _package(name)) not in ALLOWED_UPWARD]
    assert not bad, (f"{package} may import only {sorted(ALLOWED[package])} among plax "
                     "packages; reach the others through entry points:\n" + "\n".join(bad))


@pytest.mark.parametrize("member", [m for m in members() if m.import_name != KERNEL],
                         ids=lambda m: m.name)
def test_only_the_kernel_sees_its_internals(member):
    """Every other package uses the kernel as a third party would: `plax.extend` and the
    public `plax` modules."""
    bad = [f"{_where(mod, line)} imports {name}" for mod, line, name in RAW_IMPORTS
           if _package(mod) == member.import_name
           and (name == "plax._src" or name.startswith("plax._src."))]
    assert not bad, "use plax.extend instead of the kernel's internals:\n" + "\n".join(bad)


@pytest.mark.parametrize("member", members(), ids=lambda m: m.name)
def test_nothing_imports_jax(member):
    bad = [f"{_where(mod, line)} imports {name}" for mod, line, name in RAW_IMPORTS
           if _package(mod) == member.import_name and (name == "jax" or name.startswith("jax."))]
    assert not bad, "plax stands on jaxlib alone (DESIGN.md §9):\n" + "\n".join(bad)


def test_declared_dependencies_match_the_layers():
    """What a package may import is exactly what its dependencies install."""
    by_name = member_by_name()

    def closure(member: Member) -> set[str]:
        seen = {member.import_name}
        for req in member.requirements:
            dep = by_name.get(canonicalize_name(req.name))
            if dep is not None:
                seen |= closure(dep)
        return seen

    for member in members():
        assert closure(member) == ALLOWED[member.import_name], member.name


def test_every_seam_is_provided_once():
    """Each seam the kernel declares is an entry point of exactly one workspace
    distribution, in the group the kernel resolves it from."""
    from plax._src.plugins import SEAMS
    providers = collections.defaultdict(list)
    for member in members():
        for name in member.entry_points.get("plax.interpreters", {}):
            providers[name].append(member.name)
    assert {name: dists for name, dists in providers.items()} == \
        {name: [dist] for name, (_, dist) in SEAMS.items()}


def test_layer_summary(capsys):
    """Prints, per package: modules, imports inside it, imports of each lower layer."""
    edges = collections.Counter((_package(a), _package(b)) for a, bs in GRAPH.items() for b in bs)
    with capsys.disabled():
        print("\nimport graph by layer:")
        for package in sorted(WORKSPACE_PACKAGES, key=lambda p: (len(ALLOWED[p]), p)):
            n = sum(_package(m) == package for m in MODULES)
            below = ", ".join(f"{other} {edges[(package, other)]}"
                              for other in sorted(ALLOWED[package] - {package})
                              if edges[(package, other)])
            print(f"  {package:16} {n:3} modules, {edges[(package, package)]:3} imports "
                  f"inside; of lower layers: {below or '-'}")
    assert edges[("plax", "plax")] > 0


def test_scanner_sees_function_local_relative_and_dynamic_imports():
    source = (
        "import numpy as np\n"
        "from typing import TYPE_CHECKING\n"
        "from .ir import Jaxpr\n"
        "if TYPE_CHECKING:\n"
        "    from plax._src.primitive import Primitive\n"
        "def f():\n"
        "    from plax_transforms.jit import jit\n"
        "    import importlib\n"
        "    return importlib.import_module('jax.numpy'), __import__('plax_tpu')\n"
    )
    found = {mod for _, mod in imported_modules(ast.parse(source), "plax._src.api")}
    assert found == {"numpy", "typing.TYPE_CHECKING", "plax._src.ir.Jaxpr",
                     "plax_transforms.jit.jit", "importlib", "jax.numpy", "plax_tpu"}


def test_scanner_can_leave_function_bodies_out():
    source = "import a\ndef f():\n    import b\nclass C:\n    import c\n"
    found = {mod for _, mod in imported_modules(ast.parse(source), "m", module_level_only=True)}
    assert found == {"a", "c"}


def test_the_cycle_finder_finds_cycles():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
