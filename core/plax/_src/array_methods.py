"""Operators and methods shared by tracers and `plax.Array`, implemented by the
NumPy layer.

One table drives both classes, so a traced value and a concrete array behave the
same under `+`, `@`, `x.sum()`, `x[1:]`... The kernel only names the methods; the
functions behind them come from the `array_methods` entry point of the
`plax.interpreters` group (plax-stdlib's `plax_stdlib.numpy.array_methods`),
resolved on first use. That entry point is the one seam by which the kernel
calls up into the NumPy layer.
"""
from __future__ import annotations

from plax._src import plugins
from plax._src.abstract import SymbolicDimension
from plax._src.traceback_util import api_boundary

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
# (a dunder's implementation is looked up without its underscores: `contains`)
_METHODS = ("reshape astype transpose sum mean max min prod argmax argmin all any var std cumsum "
            "cumprod squeeze ravel swapaxes dot clip round conj conjugate repeat take nonzero "
            "sort argsort trace diagonal copy argpartition byteswap choose compress ptp "
            "searchsorted view to_device __array_namespace__ __array_module__ __contains__").split()
_PROPERTIES = dict(T="transpose", real="real", imag="imag", mT="matrix_transpose", flat="flat")


_provider = None


def _numpy(name: str):
    global _provider
    if _provider is None:
        _provider = plugins.resolve("plax.interpreters", "array_methods")
    return getattr(_provider, name)


def _getitem(self, index):
    # An aval may define indexing of its own values (a mutable reference's reads).
    by_aval = getattr(self.aval, "_getitem", None)
    if by_aval is not None:
        return by_aval(self, index)
    return _numpy("getitem")(self, index)


def _setitem(self, index, value):
    by_aval = getattr(self.aval, "_setitem", None)
    if by_aval is None:
        raise TypeError(f"{type(self).__name__} is immutable: instead of `x[idx] = y` use "
                        "`x = x.at[idx].set(y)`")
    by_aval(self, index, value)


def _at(self):
    by_aval = getattr(self.aval, "_at", None)  # a mutable reference's views
    if by_aval is not None:
        return by_aval(self)
    return _numpy("at")(self)


def _is_operand(x) -> bool:
    """Whether `x` can meet an array in an operator; for anything else the operator
    returns NotImplemented, so Python tries the other side (`x == None` is False). Its
    type is asked, not `x`: a proxy that forwards attributes (flax's Cursor) is not an
    array, and its own reflected operator runs, as with JAX."""
    return (hasattr(t := type(x), "aval") or hasattr(t, "__array__") or hasattr(t, "__jax_array__")
            or t in (bool, int, float, complex) or isinstance(x, SymbolicDimension))


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
    return lambda self, *args, **kwargs: _numpy(name.strip("_"))(self, *args, **kwargs)


def _shape_varargs(name):
    """`x.reshape(2, 3)` and `x.transpose(1, 0)` also accept their argument unpacked;
    `x.reshape()` is the shape (), as JAX's (NumPy's refuses it)."""
    def method(self, *args, **kwargs):
        if len(args) > 1 or (len(args) == 1 and isinstance(args[0], int)) or (
                name == "reshape" and not args):
            args = (args,)
        return _numpy(name)(self, *args, **kwargs)
    return method


def _round_operator(self, ndigits=None):
    """`round(x[, ndigits])`: without `ndigits` the result is an integer (default int
    dtype), as Python's round of a float is."""
    out = _numpy("round")(self, ndigits or 0)
    return out if ndigits is not None else out.astype(int)


def install(cls) -> None:
    """Give `cls` the NumPy-style operators, methods and properties (each a traceback
    boundary, so an error in `x + y` is shown from the line that wrote it)."""
    b = api_boundary
    for dunder, name in _BINARY.items():
        setattr(cls, f"__{dunder}__", b(_binary(name, reflected=False)))
        setattr(cls, f"__r{dunder}__", b(_binary(name, reflected=True)))
    for dunder, name in {**_COMPARE, **_UNARY}.items():
        setattr(cls, f"__{dunder}__", b(_binary(name, False) if dunder in _COMPARE
                                        else _unary(name)))
    for name in _METHODS:
        setattr(cls, name, b(_method(name)))
    cls.reshape = b(_shape_varargs("reshape"))
    cls.flatten = b(_method("ravel"))
    cls.__round__ = b(_round_operator)
    cls.transpose = b(_shape_varargs("transpose"))
    for prop, name in _PROPERTIES.items():
        setattr(cls, prop, property(b(_unary(name))))
    cls.__getitem__ = b(_getitem)
    cls._unstack = _method("unstack")  # the slices along axis 0, for iteration
    if "__setitem__" not in vars(cls):
        cls.__setitem__ = b(_setitem)
    cls.at = property(_at)
    cls.__array_priority__ = 100
