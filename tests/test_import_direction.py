"""Imports run one way (DESIGN.md §2): core ← runtime ← transforms ← sharding, and
plugins → runtime, core. Nothing imports a plugin, and nothing imports `jax`.

Every `.py` file of every package is read with `ast`, so imports inside functions
count as much as those at the top: the core reaches the other packages only
through entry points, never by importing them, even lazily.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

from workspace_layout import ROOT, Member, member_by_name, members, module_name

# Each layer may import itself and the layers to its left.
LAYERS = ("plax", "plax_runtime", "plax_transforms", "plax_sharding")
PLUGINS = ("plax_cuda12", "plax_tpu")


def allowed_imports(package: str) -> set[str]:
    if package in PLUGINS:
        return {package, "plax", "plax_runtime"}
    return set(LAYERS[:LAYERS.index(package) + 1])


def imported_modules(tree: ast.AST, this_module: str) -> list[tuple[int, str]]:
    """`(line, absolute module name)` of every import, at any depth, including
    `importlib.import_module("...")` and `__import__("...")` with literal names."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                found.append((node.lineno, node.module))
            else:  # relative: resolved against this module's package
                base = this_module.split(".")[:-node.level] or [this_module.split(".")[0]]
                found.append((node.lineno, ".".join(base + ([node.module] if node.module else []))))
        elif (isinstance(node, ast.Call) and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
              and not node.args[0].value.startswith(".")
              and ((isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                   or (isinstance(node.func, ast.Name)
                       and node.func.id in ("import_module", "__import__")))):
            found.append((node.lineno, node.args[0].value))
    return sorted(found)


def package_imports(member: Member) -> list[tuple[Path, int, str]]:
    result = []
    for file in member.python_files():
        tree = ast.parse(file.read_text(), filename=str(file))
        this_module = module_name(member, file)
        if file.name == "__init__.py":
            this_module += ".__init__"  # relative imports resolve against the package itself
        result += [(file, line, mod) for line, mod in imported_modules(tree, this_module)]
    return result


WORKSPACE_PACKAGES = set(LAYERS + PLUGINS)


def test_layers_name_every_package():
    assert {m.import_name for m in members()} == WORKSPACE_PACKAGES


@pytest.mark.parametrize("member", members(), ids=lambda m: m.name)
def test_imports_go_only_to_the_left(member):
    allowed = allowed_imports(member.import_name)
    bad = [f"{file.relative_to(ROOT)}:{line} imports {mod}"
           for file, line, mod in package_imports(member)
           if mod.split(".")[0] in WORKSPACE_PACKAGES - allowed]
    assert not bad, (f"{member.import_name} may import only {sorted(allowed)} among plax "
                     "packages; reach the others through entry points:\n" + "\n".join(bad))


@pytest.mark.parametrize("member", members(), ids=lambda m: m.name)
def test_nothing_imports_jax(member):
    bad = [f"{file.relative_to(ROOT)}:{line} imports {mod}"
           for file, line, mod in package_imports(member)
           if mod == "jax" or mod.startswith("jax.")]
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
        assert closure(member) == allowed_imports(member.import_name), member.name


def test_scanner_sees_function_local_relative_and_dynamic_imports():
    source = (
        "import numpy as np\n"
        "from .ir import Jaxpr\n"
        "def f():\n"
        "    from plax_transforms.jit import jit\n"
        "    import importlib\n"
        "    return importlib.import_module('jax.numpy'), __import__('plax_tpu')\n"
    )
    found = imported_modules(ast.parse(source), "plax._src.api")
    assert [mod for _, mod in found] == [
        "numpy", "plax._src.ir", "plax_transforms.jit", "importlib", "jax.numpy", "plax_tpu"]
