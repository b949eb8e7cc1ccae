"""Operators and methods shared by tracers and `plax.Array`, forwarded to `plax.numpy`.

One table drives both classes, so a traced value and a concrete array behave the
same under `+`, `@`, `x.sum()`, `x[1:]`... `plax.numpy` is imported on first use,
which keeps the core's import graph acyclic.
"""
from __future__ import annotations

import importlib

# dunder → (module, function, swap operands)
_BINARY = {
    "add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide",
    "floordiv": "floor_divide", "mod": "remainder", "pow": "power", "matmul": "matmul",
    "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
    "lshift": "left_shift", "rshift": "right_shift", "divmod": "divmod",
}
_COMPARE = {"lt": "less", "le": "less_equal", "eq": "equal", "ne": "not_equal",
            "gt": "greater", "ge": "greater_equal"}
_UNARY = {"neg": "negative", "pos": "positive", "abs": "absolute", "invert": "invert"}
_METHODS = ("reshape", "astype", "transpose", "sum", "mean", "max", "min", "prod",
            "argmax", "argmin", "all", "any", "var", "std", "cumsum", "cumprod", "squeeze",
            "ravel", "swapaxes", "dot", "clip", "round", "conj", "conjugate",
            "repeat", "take", "nonzero", "sort", "argsort", "trace", "diagonal")
_PROPERTIES = {"T": "transpose", "real": "real", "imag": "imag", "mT": "matrix_transpose"}


def _numpy(name: str):
    return getattr(importlib.import_module("plax.numpy"), name)


def _getitem(self, index):
    return importlib.import_module("plax._src.numpy.indexing").getitem(self, index)


def _at(self):
    return importlib.import_module("plax._src.numpy.index_update")._IndexUpdateHelper(self)


def _is_operand(x) -> bool:
    """Whether `x` can meet an array in an operator; for anything else the operator
    returns NotImplemented, so Python tries the other side (`x == None` is False)."""
    return hasattr(x, "aval") or hasattr(x, "__array__") or type(x) in (bool, int, float, complex)


def _binary(name, reflected):
    if reflected:
        def op(self, other):
            return _numpy(name)(other, self) if _is_operand(other) else NotImplemented
    else:
        def op(self, other):
            return _numpy(name)(self, other) if _is_operand(other) else NotImplemented
    return op


def _unary(name):
    return lambda self: _numpy(name)(self)


def _method(name):
    return lambda self, *args, **kwargs: _numpy(name)(self, *args, **kwargs)


def _shape_varargs(name):
    """`x.reshape(2, 3)` and `x.transpose(1, 0)` also accept their argument unpacked."""
    def method(self, *args, **kwargs):
        if len(args) > 1 or (len(args) == 1 and isinstance(args[0], int)):
            args = (args,)
        return _numpy(name)(self, *args, **kwargs)
    return method


def install(cls) -> None:
    """Give `cls` the NumPy-style operators, methods and properties."""
    for dunder, name in _BINARY.items():
        setattr(cls, f"__{dunder}__", _binary(name, reflected=False))
        setattr(cls, f"__r{dunder}__", _binary(name, reflected=True))
    for dunder, name in {**_COMPARE, **_UNARY}.items():
        setattr(cls, f"__{dunder}__", _binary(name, False) if dunder in _COMPARE
                else _unary(name))
    for name in _METHODS:
        setattr(cls, name, _method(name))
    cls.reshape = _shape_varargs("reshape")
    cls.flatten = _method("ravel")
    cls.transpose = _shape_varargs("transpose")
    for prop, name in _PROPERTIES.items():
        setattr(cls, prop, property(_unary(name)))
    cls.__getitem__ = _getitem
    cls.at = property(_at)
    cls.__array_priority__ = 100
