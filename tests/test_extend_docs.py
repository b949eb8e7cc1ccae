"""`plax.extend` is a documented contract: every name in every `plax.extend.*`
module's `__all__` has a docstring, and docs/extend.md walks through the modules.

Functions and classes need their own `__doc__`; configuration options their help
text. Constants and objects made elsewhere (a dtype, a registry, jaxlib's types)
cannot carry a `__doc__` of their own, so they are documented where they are
assigned, by the string literal that follows the assignment (an attribute
docstring), in the module that defines them.
"""
from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import types
from pathlib import Path

import pytest
from workspace_layout import ROOT

import plax.extend

MODULES = ["plax.extend"] + [f"plax.extend.{m.name}"
                             for m in pkgutil.iter_modules(plax.extend.__path__)
                             if not m.name.startswith("_")]


def _module_tree(module_name: str) -> ast.Module:
    return ast.parse(Path(importlib.import_module(module_name).__file__).read_text())


def _assigned_names(node: ast.stmt) -> set[str]:
    targets = node.targets if isinstance(node, ast.Assign) else \
        [node.target] if isinstance(node, ast.AnnAssign) else []
    names = set()
    for target in targets:
        for leaf in ast.walk(target):
            if isinstance(leaf, ast.Name):
                names.add(leaf.id)
    return names


def _has_attribute_docstring(module_name: str, name: str, seen=()) -> bool:
    """Whether `name`'s assignment in `module_name` (or in the module it is imported
    from) is followed by a string literal."""
    if module_name in seen:
        return False
    tree = _module_tree(module_name)
    body = tree.body
    for stmt, following in zip(body, body[1:] + [None]):
        if name in _assigned_names(stmt):
            return (isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
                    and isinstance(following.value.value, str) and following.value.value.strip())
    for stmt in body:
        if isinstance(stmt, ast.ImportFrom) and stmt.level == 0:
            for alias in stmt.names:
                if (alias.asname or alias.name) == name or alias.name == "*":
                    original = name if alias.name == "*" else alias.name
                    if _has_attribute_docstring(stmt.module, original, (*seen, module_name)):
                        return True
    return False


def _own_docstring(obj) -> str | None:
    if isinstance(obj, type):
        return obj.__dict__.get("__doc__")
    if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, types.MethodType,
                        types.ModuleType)):
        return obj.__doc__
    help_text = getattr(obj, "help", None)  # configuration options
    return help_text if isinstance(help_text, str) else None


@pytest.mark.parametrize("module_name", MODULES)
def test_every_exported_name_has_a_docstring(module_name):
    module = importlib.import_module(module_name)
    assert inspect.getdoc(module), f"{module_name} has no docstring"
    missing = [name for name in module.__all__
               if not (_own_docstring(getattr(module, name)) or "").strip()
               and not _has_attribute_docstring(module_name, name)]
    assert not missing, f"{module_name}: no docstring for {missing}"


def test_the_checker_sees_attribute_docstrings_and_their_absence(tmp_path, monkeypatch):
    (tmp_path / "doc_probe.py").write_text('A = 1\n"""Why A."""\nB, C = 2, 3\n"""Why B and C."""\n'
                                          'D = 4\nE = 5\n')
    (tmp_path / "doc_reexport.py").write_text("from doc_probe import A as F, D\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert all(_has_attribute_docstring("doc_probe", n) for n in "ABC")
    assert not _has_attribute_docstring("doc_probe", "D")
    assert _has_attribute_docstring("doc_reexport", "F")
    assert not _has_attribute_docstring("doc_reexport", "D")


def test_the_walk_through_names_every_module_and_rule_kind():
    text = (ROOT / "docs" / "extend.md").read_text()
    for module_name in MODULES:
        assert f"`{module_name}`" in text, f"docs/extend.md does not mention {module_name}"
    for kind in plax.extend.core.RULE_KINDS:
        assert f"`{kind}`" in text, f"docs/extend.md does not describe rule kind {kind!r}"
    for name in ("check_primitive", "coverage", "python -m plax.extend", "examples/softclip"):
        assert name in text
