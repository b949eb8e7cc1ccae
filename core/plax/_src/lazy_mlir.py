"""Lazy handles on the MLIR modules that lowering rules use.

`jaxlib.mlir` is imported the first time a rule touches `hlo`, `chlo`, `ir` or `mu`
(plax's `mlir_util`), so defining primitives, tracing and printing Jaxprs never
load it. Rule authors write `hlo.add(x, y)` as if the module were imported.
"""
from __future__ import annotations

import importlib
from types import ModuleType


class LazyModule:
    """Stands for a module and imports it on first attribute access."""

    def __init__(self, name: str):
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str):
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self._name)
        return getattr(module, attr)

    def __repr__(self):
        return f"<lazy module {self._name!r}>"


hlo = LazyModule("jaxlib.mlir.dialects.stablehlo")
"""The StableHLO dialect: the ops lowering rules emit (`hlo.add`, `hlo.sine`...)."""
chlo = LazyModule("jaxlib.mlir.dialects.chlo")
"""The CHLO dialect: ops XLA expands for you (`chlo.erf_inv`, `chlo.lgamma`...)."""
ir = LazyModule("jaxlib.mlir.ir")
"""MLIR's core: types, attributes, values (`ir.RankedTensorType`, `ir.Value`)."""
mu = LazyModule("plax._src.mlir_builders")
"""plax's builders: element types of dtypes, constants, broadcasts, comparisons,
reductions (see `plax._src.mlir_builders`)."""
