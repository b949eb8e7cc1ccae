"""The public functions JAX 0.10.2 defines jitted are `plax.jit` functions, with JAX's
options (stdlib's jax_jits.py): in `plax.numpy`, `numpy.linalg`, `scipy.linalg`,
`scipy.special`, `lax` and `nn`, the same set, inline where JAX's are, with JAX's static
arguments, and they lower, trace and export as jitted functions do. (What they stage is
compared with JAX's by test_jaxpr_printing.py.)"""
from __future__ import annotations

import inspect
import subprocess
import sys

import numpy as np
import plax
import pytest
from jax_reference import requires_jax, run_reference
from plax import export
from plax import numpy as jnp

_JITTED_OPTIONS = """
import importlib, warnings
def jitted_options(library):
    out = {}
    for module in ("numpy", "numpy.linalg", "scipy.linalg", "scipy.special", "lax", "nn"):
        namespace = importlib.import_module(library.__name__ + "." + module)
        for name in dir(namespace):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                f = getattr(namespace, name, None)
            if type(f).__name__ == "PjitFunction" and not name.startswith("_"):
                info = getattr(f, "_jit_info", None) or f._info
                out[f"{module}.{name}"] = [info.inline, sorted(info.static_argnames),
                                           sorted(info.static_argnums), f.__name__]
    return out
"""


@requires_jax
def test_the_jitted_functions_and_their_options_are_jaxs():
    theirs = run_reference(_JITTED_OPTIONS + "result = jitted_options(jax)\n")
    namespace: dict = {}
    exec(_JITTED_OPTIONS, namespace)
    mine = namespace["jitted_options"](plax)
    assert sum(name.startswith("numpy.") and name.count(".") == 1 for name in theirs) == 164
    assert sorted(mine) == sorted(theirs)
    assert {n: o for n, o in mine.items() if o != theirs[n]} == {}


def test_jitted_functions_have_the_stages_of_a_jit():
    x = jnp.arange(4.0)
    assert "module @jit_sin" in jnp.sin.lower(x).as_text()
    assert str(jnp.sort.trace(x).jaxpr) == str(plax.make_jaxpr(jnp.sort.__wrapped__)(x).jaxpr)
    assert jnp.cumsum.eval_shape(x, axis=0) == plax.ShapeDtypeStruct((4,), jnp.float32)
    np.testing.assert_array_equal(jnp.round.lower(x, 2).compile()(x), jnp.round(x, 2))
    exported = export.export(jnp.sin)(x)  # (JAX's docstring example of export)
    np.testing.assert_array_equal(exported.call(x), jnp.sin(x))
    with pytest.raises(ValueError, match="Non-hashable static arguments"):
        jnp.cumsum(x, axis=[0])  # axis is static, as in JAX


def test_names_and_signatures_are_the_functions():
    assert (jnp.acosh.__name__, jnp.acosh.__wrapped__.__name__) == ("acosh", "acosh")
    assert jnp.sin.__doc__ == jnp.sin.__wrapped__.__doc__ and ">>>" in jnp.sin.__doc__
    assert str(inspect.signature(jnp.around)) == "(a, decimals: 'int' = 0, out=None)"
    # Aliases JAX leaves unjitted are plain functions calling the jitted one.
    assert not hasattr(jnp.divide, "lower") and not hasattr(jnp.conj, "lower")


def test_the_jit_modules_import_without_plax_numpy():
    """plax.numpy's import makes its jit functions, so `plax.jit`'s own modules must not
    import plax.numpy (each would wait on the other)."""
    script = ("import sys, plax_transforms.jit\n"
              "print(sorted(m for m in sys.modules if m.startswith('plax_stdlib.numpy')))")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]"
