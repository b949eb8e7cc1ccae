"""The functions behind the operators and methods of tracers and `plax.Array`s.

The kernel names the methods (`plax.extend.core.install_array_methods`) and looks
their implementations up here, through the `array_methods` entry point of the
`plax.interpreters` group: NumPy functions by their `plax.numpy` names, plus
`getitem` (`x[...]`) and `at` (`x.at[...]` updates).

The arithmetic operators of concrete arrays outside every trace run their NumPy
function jitted (through the `plax.jit` facade), as JAX's ufuncs are jitted
functions: a repeated `x * 1.0001 + 0.1` is then one cached C++ call per operator
(its Python scalar an argument of the cached executable) instead of dtype
promotion in Python and a primitive dispatch each time; on `plax.Array` those
operators are C++ (`jitted` gives plax-transforms what they call). Traced operands,
and any call inside a trace, take the plain function, so Jaxprs are unchanged.
"""
import plax
from plax.extend.core import EVAL_TRACE, Tracer, current_trace
from plax_stdlib import numpy as _jnp
from plax_stdlib.numpy.index_update import _IndexUpdateHelper as at  # noqa: F401
from plax_stdlib.numpy.indexing import getitem  # noqa: F401


_jitted: dict = {}  # made on first use: plax.jit resolves through an entry point

# operator (dunder without underscores) -> its NumPy function, jitted when concrete
JITTED_OPERATORS = {"add": "add", "sub": "subtract", "mul": "multiply",
                    "truediv": "true_divide"}


def jitted(name: str):
    """`plax.jit` of the NumPy function `name` (a value of `JITTED_OPERATORS`)."""
    fun = _jitted.get(name)
    if fun is None:
        fun = _jitted[name] = plax.jit(getattr(_jnp, name))
    return fun


def _jitted_when_concrete(name: str):
    fun = getattr(_jnp, name)

    def operator(x1, x2, /):
        if (current_trace() is not EVAL_TRACE or isinstance(x1, Tracer)
                or isinstance(x2, Tracer)):
            return fun(x1, x2)
        return jitted(name)(x1, x2)

    operator.__name__ = operator.__qualname__ = name
    operator.__doc__ = fun.__doc__
    return operator


add, subtract, multiply, true_divide = map(_jitted_when_concrete, JITTED_OPERATORS.values())


def __getattr__(name: str):
    return getattr(_jnp, name)
