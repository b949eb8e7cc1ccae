"""`plax.scipy`: SciPy's API on plax arrays, with `jax.scipy`'s semantics.

Each subpackage (`plax.scipy.linalg`, and whichever others sit beside it in this
package: `special`, `stats`...) is its own module, imported on first use as an
attribute (`plax.scipy.linalg.solve`) or by `import plax.scipy.linalg`; adding
one needs no change here.
"""
import importlib
import importlib.util


def __getattr__(name: str):
    if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'plax.scipy' has no attribute {name!r}")
