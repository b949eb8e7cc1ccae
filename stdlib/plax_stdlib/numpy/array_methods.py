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
from plax_stdlib import numpy as _jnp
from plax_stdlib.numpy import ufuncs, util
from plax_stdlib.numpy.index_update import _IndexUpdateHelper as at  # noqa: F401
from plax_stdlib.numpy.indexing import getitem  # noqa: F401


_jitted: dict = {}  # made on first use: plax.jit resolves through an entry point

# operator (dunder without underscores) -> its NumPy function, jitted when concrete
JITTED_OPERATORS = {"add": "add", "sub": "subtract", "mul": "multiply",
                    "truediv": "true_divide"}


def jitted(name: str):
    """`plax.jit` of the NumPy function `name` (a value of `JITTED_OPERATORS`: its plain
    function, not the `jnp.ufunc` object calling it)."""
    fun = _jitted.get(name)
    if fun is None:
        fun = _jitted[name] = plax.jit(getattr(ufuncs, name))
    return fun


def _jitted_when_concrete(name: str):
    return util.jitted_when_concrete(getattr(ufuncs, name),
                                     lambda x1, x2, /: jitted(name)(x1, x2))


add, subtract, multiply, true_divide = map(_jitted_when_concrete, JITTED_OPERATORS.values())


def __getattr__(name: str):
    return getattr(_jnp, name)
