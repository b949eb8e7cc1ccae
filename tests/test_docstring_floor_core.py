"""Examples in the docstrings of `plax`, `plax.lax` and `plax.random` do not go missing.

Counts, per module, the public functions and classes whose docstrings have `>>>`
examples that `test_docstring_examples` runs, and fails when a count drops below the
floor reached when they were written (raise a floor when you add examples; the names
without one are listed by `python tests/test_docstring_floor_core.py`).
"""
from __future__ import annotations

import importlib
import inspect

import pytest
from test_docstring_examples import TESTED, public_names

# Reached on 2026-12-06. The names still without an example: in plax, those another
# module documents (Array, NamedSharding, P, reshard, set_mesh, ds), jaxlib's Device and
# the default_device option; in plax.lax, type aliases (DotDimensionNumbers,
# PrecisionLike, ConvGeneralDilatedDimensionNumbers), FftType (plax.numpy.fft's),
# DotAlgorithm (no CPU support) and psend/precv (GPU only).
FLOORS = {"plax": 96, "plax.lax": 218, "plax.random": 47}


def _with_examples(module_name: str) -> tuple[list[str], list[str]]:
    module = importlib.import_module(module_name)
    have, lack = [], []
    for name in public_names(module_name):
        obj = getattr(module, name)
        if not callable(obj):
            continue
        (have if id(inspect.unwrap(obj)) in TESTED else lack).append(name)
    return have, lack


@pytest.mark.parametrize("module_name", sorted(FLOORS))
def test_public_functions_keep_their_examples(module_name):
    have, lack = _with_examples(module_name)
    assert len(have) >= FLOORS[module_name], (
        f"{module_name}: {len(have)} public functions/classes have doctested examples, "
        f"below the floor of {FLOORS[module_name]}; without one: {', '.join(lack)}")


if __name__ == "__main__":
    for module_name in sorted(FLOORS):
        have, lack = _with_examples(module_name)
        print(f"{module_name}: {len(have)} with examples (floor {FLOORS[module_name]}); "
              f"without: {' '.join(lack)}")
