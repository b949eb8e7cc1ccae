"""The examples in the public docstrings run, as doctests, on the suite's 8 CPU devices.

Every public name of the modules the API reference documents is searched for
`>>>` examples (a function exported under several names is run once); each
docstring's examples run in a fresh namespace holding `plax`, `jnp` and `np`.
"""
from __future__ import annotations

import doctest
import importlib
import inspect
import os
import sys

import numpy as np
import pytest
from workspace_layout import ROOT

sys.path.insert(0, str(ROOT / "docs" / "hooks"))
from api_reference import public_names  # noqa: E402

MODULES = ["plax", "plax.numpy", "plax.numpy.linalg", "plax.numpy.fft", "plax.lax",
           "plax.random", "plax.nn", "plax.nn.initializers", "plax.sharding", "plax.tree_util",
           "plax.experimental.pallas", "plax.distributed", "plax.extend"]


def _defined_by_plax(obj) -> bool:
    """Whether plax wrote `obj` (NumPy's own functions re-exported keep NumPy's doctests);
    plax-pallas's sources count too."""
    from plax.extend.traceback_util import is_plax_file
    if not (inspect.isclass(obj) or inspect.isroutine(obj) or inspect.ismodule(obj)):
        if "__doc__" not in getattr(obj, "__dict__", {}):
            return False  # an instance documented only by its class
        obj = type(obj)  # an instance with a docstring of its own (a config option)
    module = getattr(obj, "__module__", None)
    if isinstance(module, str) and module.split(".")[0] == "plax":
        importlib.import_module(module)  # a class re-homed to a lazily imported module
    try:
        source = inspect.getsourcefile(obj) or ""
    except TypeError:  # a builtin, a value
        return False
    return is_plax_file(source) or source.startswith(_PALLAS_DIR)


# (its __file__: once `plax.experimental.pallas` is imported, the module's spec is the
# alias's, which has no origin)
_PALLAS_DIR = os.path.dirname(importlib.import_module("plax_pallas").__file__)


def _docstring_tests() -> list[doctest.DocTest]:
    import plax
    finder = doctest.DocTestFinder(recurse=False, exclude_empty=True)
    tests, seen = [], set()
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for name in public_names(module_name):
            obj = getattr(module, name)
            target = inspect.unwrap(obj) if callable(obj) else obj
            if id(target) in seen or not _defined_by_plax(target):
                continue
            seen.add(id(target))
            globs = {"plax": plax, "jnp": importlib.import_module("plax.numpy"), "np": np}
            try:
                found = finder.find(obj, f"{module_name}.{name}", globs=globs)
            except ValueError:  # an object doctest cannot search (no source to locate)
                continue
            tests.extend(t for t in found if t.examples)
            if any(t.examples for t in found):
                TESTED.add(id(target))
    return tests


TESTED: set[int] = set()  # the objects whose docstrings have examples


TESTS = _docstring_tests()


def test_the_most_used_functions_have_examples():
    for name in ("plax.jit", "plax.grad", "plax.value_and_grad", "plax.vmap", "plax.jacfwd",
                 "plax.jacrev", "plax.hessian", "plax.jvp", "plax.vjp", "plax.shard_map",
                 "plax.device_put", "plax.lax.scan", "plax.lax.cond", "plax.lax.while_loop",
                 "plax.lax.fori_loop", "plax.random.key", "plax.random.split",
                 "plax.random.normal", "plax.random.uniform", "plax.random.PRNGKey",
                 "plax.random.fold_in", "plax.nn.relu", "plax.nn.softmax", "plax.nn.sigmoid",
                 "plax.nn.gelu", "plax.nn.log_softmax", "plax.make_jaxpr", "plax.eval_shape",
                 "plax.checkpoint", "plax.make_mesh", "plax.tree_util.tree_map",
                 "plax.tree_util.tree_flatten"):
        module, _, attr = name.rpartition(".")
        obj = getattr(importlib.import_module(module), attr)
        assert id(inspect.unwrap(obj)) in TESTED, f"{name} has no example in its docstring"


@pytest.mark.parametrize("test", TESTS, ids=[t.name for t in TESTS])
def test_docstring_example(test):
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    output = []
    runner.run(test, out=output.append)
    assert runner.failures == 0, "".join(output)


# How many public names of each module (those plax defines) have a `>>>` example: a
# floor that may rise, never fall (issue 33's "docstrings that teach").
EXAMPLE_FLOORS = {
    "plax.nn": 35, "plax.nn.initializers": 20, "plax.sharding": 21, "plax.tree_util": 28,
    "plax.experimental.pallas": 19, "plax.distributed": 3, "plax.extend": 9,
    "plax.numpy": 383, "plax.numpy.linalg": 36, "plax.numpy.fft": 18,
}


def _names_with_examples(module_name: str) -> tuple[int, list[str]]:
    module = importlib.import_module(module_name)
    with_example, without = 0, []
    for name in public_names(module_name):
        obj = getattr(module, name)
        if not _defined_by_plax(inspect.unwrap(obj) if callable(obj) else obj):
            continue
        if ">>>" in (inspect.getdoc(obj) or ""):
            with_example += 1
        else:
            without.append(name)
    return with_example, without


@pytest.mark.parametrize("module_name", sorted(EXAMPLE_FLOORS))
def test_the_count_of_names_with_examples_does_not_drop(module_name):
    count, without = _names_with_examples(module_name)
    assert count >= EXAMPLE_FLOORS[module_name], (
        f"{module_name}: {count} public names have examples, fewer than the floor "
        f"{EXAMPLE_FLOORS[module_name]}; without one: {without}")
