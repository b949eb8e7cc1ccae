"""The functions behind the operators and methods of tracers and `plax.Array`s.

The kernel names the methods (`plax.extend.core.install_array_methods`) and looks
their implementations up here, through the `array_methods` entry point of the
`plax.interpreters` group: NumPy functions by their `plax.numpy` names, plus
`getitem` (`x[...]`) and `at` (`x.at[...]` updates).
"""
from plax_stdlib import numpy as _jnp
from plax_stdlib.numpy.index_update import _IndexUpdateHelper as at  # noqa: F401
from plax_stdlib.numpy.indexing import getitem  # noqa: F401


def __getattr__(name: str):
    return getattr(_jnp, name)
